"""storage/cleaner.py: the cleaner threads compact the manager's logs and resize at run time."""
from josefk.storage import LogManager
from josefk.wire.records import build_batch
from tests.storage.logs import all_records, append, cfg


def _cleaner_threads(others=frozenset()):
    """The cleaner threads alive but ``others`` (those of brokers other tests left running in
    this process, such as the session's josefk_broker)."""
    import threading
    return [t for t in threading.enumerate()
            if t.name.startswith("josefk-cleaner-") and t not in others]


def _wait(predicate, what, timeout=10.0):
    import time
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_cleaner_threads_compact_and_resize(tmp_path):
    from josefk.storage.cleaner import LogCleaner

    m = LogManager([str(tmp_path / "d")], cfg(segment_bytes=200, cleanup_policy="compact"))
    logs = [m.get_or_create("c", i) for i in range(4)]

    def fill():
        for lg in logs:
            for _ in range(6):
                append(lg, build_batch([(b"k", b"v" * 80, None, 1)]))

    fill()
    others = frozenset(_cleaner_threads())
    cleaner = LogCleaner(m, backoff_ms=20)
    cleaner.resize(3)  # not started: no threads yet
    assert cleaner.thread_count == 0 and _cleaner_threads(others) == []
    cleaner.start(2)
    try:
        assert len(_cleaner_threads(others)) == 2
        _wait(lambda: all(len(all_records(lg)) == 2 for lg in logs), "two threads to compact")
        cleaner.resize(4)
        assert cleaner.thread_count == 4 and len(_cleaner_threads(others)) == 4
        cleaner.resize(1)
        assert cleaner.thread_count == 1
        _wait(lambda: len(_cleaner_threads(others)) == 1, "the removed threads to exit")
        fill()
        _wait(lambda: all(len(all_records(lg)) == 2 for lg in logs), "one thread to compact")
    finally:
        cleaner.stop()
    assert _cleaner_threads(others) == []
    m.close()
