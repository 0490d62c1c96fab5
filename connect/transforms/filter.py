"""Filter: drops every record it is applied to; with a predicate (``predicate``, ``negate``),
the records that match (or do not)."""
from __future__ import annotations

from josefk.connect.transforms.util import Transform


class Filter(Transform):
    def configure(self, configs: dict) -> None:
        self.CONFIG_DEF.parse(configs)

    def apply(self, record):
        return None
