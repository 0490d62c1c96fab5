"""What every broker handle of ``josefk.testing`` can do to its broker: inject errors and delays
through the broker's control endpoint (``broker/injection.py``); and `Unavailable`, what a test
cannot have here."""
from __future__ import annotations

import json
import socket


class Unavailable(RuntimeError):
    """What this machine or this cluster cannot give a test (no Java for ZooKeeper, faults on a
    cluster that is not josefk's own...); the message says why. The pytest plugin skips a test
    that meets it, with that reason."""


class Faults:
    """Faults on one broker; ``control`` is its control endpoint's ``(host, port)``."""

    control: tuple[str, int] | None = None

    def inject(self, api, error, count: int = 1) -> None:
        """Answer the next ``count`` requests of ``api`` (a name such as ``"Produce"``, or a
        key) with ``error`` (a Kafka error name such as ``"NOT_LEADER_OR_FOLLOWER"``, or a
        code) on every topic, partition or group of the response, without handling them."""
        self._control({"op": "inject", "api": api, "error": error, "count": count})

    def delay(self, api, ms: int) -> None:
        """Hold every response of ``api`` back ``ms`` milliseconds; ``delay(api, 0)`` ends it."""
        self._control({"op": "delay", "api": api, "ms": ms})

    def clear_faults(self) -> None:
        """End every injected error and delay."""
        self._control({"op": "clear"})

    def faults(self) -> dict:
        """What is still set: ``{"errors": {api: [error, requests left]}, "delays": {api: ms}}``."""
        return self._control({"op": "faults"})

    def _control(self, command: dict) -> dict:
        from josefk.broker.injection import FaultError

        if self.control is None:
            raise Unavailable("this broker has no control endpoint to inject faults through")
        with socket.create_connection(self.control, timeout=10) as s:
            s.sendall(json.dumps(command).encode() + b"\n")
            answer = json.loads(s.makefile("rb").readline() or b'{"error": "no answer"}')
        if "error" in answer:
            raise FaultError(answer["error"])
        return answer["faults"]
