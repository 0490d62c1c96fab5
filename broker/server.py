"""The connection loop: frames in, dispatch, responses out in request order.

The server knows no API's fields: it decodes the header, asks `broker.dispatch` for the handler,
decodes the body with the API's compiled codec, and encodes whatever response object the
handler produced. A malformed frame or request closes that one connection.
"""
from __future__ import annotations

import asyncio
import collections
import logging

from broker.security import ConnectionSecurity
from wire import errors, headers
from wire.apis import API_BY_KEY
from wire.framing import FrameReader, frame
from wire.types import DecodeError

log = logging.getLogger("josefk.server")

NO_RESPONSE = object()  # a handler's answer for requests that get none (Produce with acks=0)
MAX_IN_FLIGHT = 256


class RequestContext:
    __slots__ = ("header", "api", "client_host", "connection")

    def __init__(self, header, api, client_host, connection):
        self.header = header
        self.api = api
        self.client_host = client_host
        self.connection = connection

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def listener(self) -> str:
        """The name of the listener the request came in on."""
        return self.connection.security.listener.name

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""


class _Slot:
    """One request's place in the response order."""

    __slots__ = ("chunks", "done")

    def __init__(self):
        self.chunks = None
        self.done = False


class Connection(asyncio.Protocol):
    def __init__(self, broker, listener):
        self.broker = broker
        self.security = ConnectionSecurity(listener)
        self.closing = False  # close once every queued response is written (then wait close_delay)
        self.close_delay = 0.0
        self.muted_until = 0.0  # loop time until which a quota throttles the client (KIP-219)
        self.reader = FrameReader(broker.config.int("socket.request.max.bytes"))
        self.transport = None
        self.client_host = ""
        self.pending = collections.deque()
        self.closed = False
        self.paused = False
        self.write_blocked = False
        self.batching = False
        self.tasks = set()

    # -- asyncio callbacks ----------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.client_host = peer[0] if peer else ""
        self.broker.connections.add(self)
        try:
            self.security.on_tls_handshake(transport.get_extra_info("ssl_object"))
        except ValueError as e:
            self.abort(str(e))

    def connection_lost(self, exc):
        self.closed = True
        self.broker.connections.discard(self)
        for t in self.tasks:
            t.cancel()

    def pause_writing(self):
        self.write_blocked = True
        self._update_reading()

    def resume_writing(self):
        self.write_blocked = False
        self._update_reading()

    def data_received(self, data):
        try:
            frames = self.reader.feed(data)
        except DecodeError as e:
            return self.abort(f"bad frame: {e}")
        self.batching = True  # answers to this read go out together, after it
        try:
            for f in frames:
                if self.closed or self.closing:
                    return
                self.handle_frame(f)
        finally:
            self.batching = False
        self._flush()
        self._update_reading()

    # -- request handling -----------------------------------------------------------------------
    def handle_frame(self, buf):
        try:
            h = headers.peek_request_header(buf)
        except DecodeError as e:
            return self.abort(f"bad request header: {e}")
        api = API_BY_KEY.get(h.api_key)
        handler = self.broker.handlers.get(h.api_key)
        if api is None or handler is None:
            return self.abort(f"unknown api key {h.api_key}")
        if h.api_version not in api.versions:
            if h.api_key == 18:
                return self.respond_unsupported_api_versions(h)
            return self.abort(f"unsupported version {h.api_version} of {api.name}")
        refusal = self.security.refusal(h.api_key)
        if refusal is not None:
            return self.abort(refusal)
        try:
            h, pos = headers.read_request_header(buf, api.request_header_version(h.api_version))
            req, _end = api.Request.decode(buf, h.api_version, pos)
        except DecodeError as e:
            return self.abort(f"cannot decode {api.name} v{h.api_version}: {e}")
        ctx = RequestContext(h, api, self.client_host, self)
        try:
            result = handler(self.broker, ctx, req)
        except Exception:
            log.exception("%s handler failed", api.name)
            return self.abort(f"{api.name} handler failed")
        if result is NO_RESPONSE:
            return
        slot = _Slot()
        self.pending.append(slot)
        if not asyncio.iscoroutine(result):
            return self._complete(slot, ctx, result)
        task = asyncio.ensure_future(result)
        self.tasks.add(task)
        task.add_done_callback(lambda t, s=slot, c=ctx: self._finished(t, s, c))

    def _finished(self, task, slot, ctx):
        self.tasks.discard(task)
        if task.cancelled() or self.closed:
            return
        exc = task.exception()
        if exc is not None:
            log.error("%s handler failed", ctx.api.name, exc_info=exc)
            return self.abort(f"{ctx.api.name} handler failed")
        self._deliver(slot, ctx, task.result())

    def _deliver(self, slot, ctx, result):
        if result is NO_RESPONSE:
            slot.done = True
            slot.chunks = ()
            self._flush()
        else:
            self._complete(slot, ctx, result)

    def _complete(self, slot, ctx, response):
        v = ctx.version
        hdr = headers.response_header(ctx.header.correlation_id,
                                      ctx.api.response_header_version(v))
        try:
            slot.chunks = frame(response.encode(v, hdr))
        except Exception:
            log.exception("cannot encode %s v%d response", ctx.api.name, v)
            return self.abort("response encoding failed")
        slot.done = True
        self._flush()

    def _flush(self):
        """Write every response that is next in order, in one call."""
        pending = self.pending
        if self.closed or self.batching or not (pending and pending[0].done):
            return
        out = []
        while pending and pending[0].done:
            out += pending.popleft().chunks
        if out:
            self.transport.writelines(out)
        if self.closing and not pending:
            self.closed = True
            asyncio.get_running_loop().call_later(self.close_delay, self.transport.close)
            return
        if self.paused:
            self._update_reading()

    def respond_unsupported_api_versions(self, h):
        api = API_BY_KEY[18]
        resp = api.Response(error_code=errors.UNSUPPORTED_VERSION,
                            api_keys=self.broker.api_versions)
        slot = _Slot()
        self.pending.append(slot)
        ctx = RequestContext(headers.RequestHeader(18, 0, h.correlation_id), api,
                             self.client_host, self)
        self._complete(slot, ctx, resp)

    def _update_reading(self):
        """Backpressure: stop reading requests while the client is not reading its answers or
        too many of its requests are still being handled."""
        paused = self.write_blocked or len(self.pending) > MAX_IN_FLIGHT or self.muted_until > 0
        if paused != self.paused and not (self.closed or self.closing):
            self.paused = paused
            (self.transport.pause_reading if paused else self.transport.resume_reading)()

    def mute(self, ms: int):
        """Read nothing more from this client for ``ms`` (a quota's throttle time)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000
        if until > self.muted_until:
            self.muted_until = until
            self._update_reading()
            loop.call_at(until, self._unmute, until)

    def _unmute(self, until):
        if self.muted_until == until:
            self.muted_until = 0.0
            self._update_reading()

    def close_after_response(self, delay_s: float = 0.0):
        """Close the connection ``delay_s`` after the responses queued so far are written (a
        failed authentication); later requests are not read."""
        self.closing = True
        self.close_delay = delay_s
        self.transport.pause_reading()

    def abort(self, reason: str):
        log.warning("closing connection from %s: %s", self.client_host, reason)
        self.closed = True
        if self.transport is not None:
            self.transport.abort()


async def serve(broker, listener, host: str, port: int):
    """Accept connections on one listener (``broker.security.ListenerSecurity``); TLS listeners
    wrap the sockets with the listener's context."""
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: Connection(broker, listener), host, port,
                                    reuse_address=True, backlog=1024, ssl=listener.ssl_context)
