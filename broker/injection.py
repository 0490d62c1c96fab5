"""Faults for tests (``josefk.testing``): the next requests of an API answered with a Kafka
error (`FaultInjector.inject`), or an API's responses held back (`FaultInjector.delay`).

Like the metrics, faults wrap handlers and never change them, and only while a fault is set: a
handler is wrapped when a fault on its API is set and put back in ``broker.handlers`` when the
fault is spent or cleared, so a broker without faults runs exactly the handlers it always runs.

A test reaches a broker subprocess through the control endpoint, off unless
``josefk.testing.control.port`` is set, and on 127.0.0.1 only: one JSON object per line, each
answered by one line, ``{"ok": true, "faults": ...}`` or ``{"error": "..."}``::

    {"op": "inject", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}
    {"op": "delay", "api": "Fetch", "ms": 500}     (0 ends it)
    {"op": "clear"}
    {"op": "faults"}                               (what is still set)

APIs are given by name or key, errors by name or code.
"""
from __future__ import annotations

import asyncio
import json
import logging
from types import CoroutineType

from josefk.broker.handlers import NO_RESPONSE
from josefk.wire import errors
from josefk.wire.apis import API_BY_KEY, PRODUCE
from josefk.wire.error_responses import error_response

log = logging.getLogger("josefk.injection")

_API_BY_NAME = {api.name.lower(): api for api in API_BY_KEY.values()}


class FaultError(ValueError):
    """A fault that cannot be set (an API the broker does not serve, an unknown error...)."""


class FaultInjector:
    def __init__(self, handlers: dict):
        """``handlers``: the broker's table (api key -> handler), changed in place."""
        self.handlers = handlers
        self.errors: dict[int, list] = {}  # api key -> [error code, requests left]
        self.delays: dict[int, int] = {}  # api key -> ms
        self._handlers: dict[int, object] = {}  # api key -> its handler, while wrapped
        self.server = None

    # -- faults --------------------------------------------------------------------------------
    def inject(self, api, error, count: int = 1) -> None:
        """Answer the next ``count`` requests of ``api`` with ``error`` on every entry, without
        handling them (a failed Produce appends nothing)."""
        key, code = self._api(api), _error(error)
        if not isinstance(count, int) or count < 1:
            raise FaultError(f"count must be a positive integer, got {count!r}")
        self.errors[key] = [code, count]
        self._wrap(key)

    def delay(self, api, ms: int) -> None:
        """Hold every response of ``api`` back ``ms`` milliseconds (0: no longer)."""
        key = self._api(api)
        if not isinstance(ms, int) or ms < 0:
            raise FaultError(f"ms must be a non-negative integer, got {ms!r}")
        if ms:
            self.delays[key] = ms
            self._wrap(key)
        else:
            self.delays.pop(key, None)
            self._unwrap(key)

    def clear(self) -> None:
        self.errors.clear()
        self.delays.clear()
        for key in list(self._handlers):
            self._unwrap(key)

    def pending(self) -> dict:
        """What is still set: {"errors": {api: [error, requests left]}, "delays": {api: ms}}."""
        return {"errors": {API_BY_KEY[k].name: [errors.name(c), n]
                           for k, (c, n) in self.errors.items()},
                "delays": {API_BY_KEY[k].name: ms for k, ms in self.delays.items()}}

    def _api(self, api) -> int:
        found = API_BY_KEY.get(api) if isinstance(api, int) else \
            _API_BY_NAME.get(str(api).lower())
        if found is None or found.key not in self.handlers:
            raise FaultError(f"this broker serves no API {api!r}")
        return found.key

    def _wrap(self, key: int) -> None:
        if key not in self._handlers:
            handler = self._handlers[key] = self.handlers[key]
            self.handlers[key] = self._faulty(key, handler)

    def _unwrap(self, key: int) -> None:
        if key not in self.errors and key not in self.delays and key in self._handlers:
            self.handlers[key] = self._handlers.pop(key)

    def _faulty(self, key, handler):
        def faulty(broker, ctx, req):
            fault = self.errors.get(key)
            if fault is None:
                result = handler(broker, ctx, req)
            else:
                fault[1] -= 1
                if not fault[1]:
                    del self.errors[key]
                    self._unwrap(key)
                if key == PRODUCE.key and req.acks == 0:
                    result = NO_RESPONSE
                else:
                    result = error_response(ctx.api, req, fault[0])
            ms = self.delays.get(key)
            return _after(result, ms) if ms else result
        return faulty

    # -- the control endpoint ------------------------------------------------------------------
    async def start(self, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        log.info("test control endpoint on 127.0.0.1:%d: faults can be injected",
                    self.port)

    @property
    def port(self) -> int | None:
        return self.server.sockets[0].getsockname()[1] if self.server is not None else None

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader, writer) -> None:
        try:
            while line := await reader.readline():
                writer.write(json.dumps(self.command(line)).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, ValueError):  # ValueError: a line over the stream's limit
            pass
        finally:
            writer.close()

    def command(self, line: bytes) -> dict:
        """One line of the control endpoint, answered."""
        try:
            cmd = json.loads(line)
            op = cmd.get("op") if isinstance(cmd, dict) else None
            if op == "inject":
                self.inject(cmd.get("api"), cmd.get("error"), cmd.get("count", 1))
            elif op == "delay":
                self.delay(cmd.get("api"), cmd.get("ms"))
            elif op == "clear":
                self.clear()
            elif op != "faults":
                raise FaultError(f"unknown op {op!r} (inject, delay, clear, faults)")
        except (json.JSONDecodeError, UnicodeDecodeError, FaultError) as e:
            return {"error": str(e)}
        return {"ok": True, "faults": self.pending()}


def _error(error) -> int:
    code = error if isinstance(error, int) and not isinstance(error, bool) else \
        errors.code(str(error))
    if code is None or code == errors.NONE:
        raise FaultError(f"not a Kafka error: {error!r}")
    return code


async def _after(result, ms: int):
    response = await result if type(result) is CoroutineType else result
    await asyncio.sleep(ms / 1000)
    return response
