"""The worker's log levels as Connect's ``/admin/loggers`` shows and sets them (KIP-495): Python's
loggers under Log4j's level names, each with the time it was last set through the API."""
from __future__ import annotations

import logging
import time

# Log4j's levels on Python's scale (TRACE below DEBUG, OFF above everything).
LEVELS = {"ALL": 1, "TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
          "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
          "OFF": logging.CRITICAL + 10}
_BY_VALUE = sorted((value, name) for name, value in LEVELS.items())
ROOT = "root"


def level_name(level: int) -> str:
    """The Log4j name of a Python level: the least severe Log4j level at or above it."""
    for value, name in _BY_VALUE:
        if level <= value:
            return name
    return "OFF"


class Loggers:
    """Reads and sets levels on Python's logging tree; ``last_modified`` (ms) records which
    levels the API set (None for the others), as Connect's ``Loggers`` does."""

    def __init__(self, clock=time.time):
        self.clock = clock
        self.modified: dict[str, int] = {}

    @staticmethod
    def _named() -> dict[str, logging.Logger]:
        return {name: lg for name, lg in logging.root.manager.loggerDict.items()
                if isinstance(lg, logging.Logger)}

    def _entry(self, name: str, logger: logging.Logger) -> dict:
        return {"level": level_name(logger.getEffectiveLevel()),
                "last_modified": self.modified.get(name)}

    def all_levels(self) -> dict:
        """Every logger with a level of its own, and the root logger."""
        out = {name: self._entry(name, lg) for name, lg in sorted(self._named().items())
               if lg.level != logging.NOTSET}
        out[ROOT] = self._entry(ROOT, logging.root)
        return out

    def level(self, name: str) -> dict | None:
        """None for a logger that does not exist."""
        if name == ROOT:
            return self._entry(ROOT, logging.root)
        logger = self._named().get(name)
        return self._entry(name, logger) if logger else None

    def set_level(self, namespace: str, level: str) -> list[str]:
        """Set ``level`` (a Log4j name, known to be valid) on ``namespace`` and every logger
        under it (``root``: every logger); the names of the loggers set, sorted."""
        value = LEVELS[level]
        named = self._named()
        if namespace == ROOT:
            targets = {ROOT: logging.root, **named}
        else:
            targets = {name: lg for name, lg in named.items()
                       if name == namespace or name.startswith(namespace + ".")}
            if namespace not in targets:
                targets[namespace] = logging.getLogger(namespace)
        now = int(self.clock() * 1000)
        for name, logger in targets.items():
            logger.setLevel(value)
            self.modified[name] = now
        return sorted(targets)
