"""What `josefk.testing.broker` and `cluster` return have one life: started with their topics
by the constructor (which, failing, stops what it started and raises), ended once by `close`
(or the ``with`` block, or, if never closed, the interpreter's exit)."""
from __future__ import annotations

import weakref

from josefk.testing.admin import topic_specs


class Lifecycle:
    """A context manager whose `close` runs the subclass's ``_close`` once; the subclass is an
    `Admin` (it creates topics)."""

    def _start(self, start, topics) -> None:
        """``start()``, then create ``topics``; on any failure `close`, and raise."""
        self._closer = weakref.finalize(self, self._close)
        try:
            start()
            for name, partitions, config in topic_specs(topics):
                self.create_topic(name, partitions, config)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop everything it started and remove its data (a second call does nothing)."""
        self._closer()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
