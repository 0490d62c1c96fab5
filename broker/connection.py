"""The connection core, sans I/O (the h11 model): bytes and security events in; frames, the
responses in request order and read/mute/close decisions out. It owns no socket and no timer:
`broker.server` moves its bytes, writes what `take_output` hands out (file regions with
sendfile), follows `reading`, arms the timer `muted_until` asks for and closes when the state
says so. Handlers get the core as ``ctx.connection`` and change it only through the events
they return (`broker.security.listeners.Reply`).

Where a connection stands is one state, and `TABLE` is the only place that says which events
each state allows and where each leads. An event its state does not allow closes that one
connection with the reason logged, as Kafka's SocketServer closes a channel it cannot serve:

    HANDSHAKE ─Accepted─► AUTHENTICATING ─Authenticated─► READY ─Throttle─► THROTTLED
                          (at once on a listener without SASL)  ◄────Unmute────
    AUTHENTICATING, READY, THROTTLED ─BareTokens─► SASL_TOKENS ─Authenticated─► READY
    AUTHENTICATING, SASL_TOKENS, READY, THROTTLED ─CloseAfter─► CLOSING ─Written─► CLOSED
    any state ─Close─► CLOSED
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from types import CoroutineType

from josefk.broker import eager
from josefk.broker.handlers import NO_RESPONSE
from josefk.broker.handlers.sasl import sasl_token
from josefk.broker.security.listeners import (Authenticated, BareTokens, CloseAfter,
                                              ConnectionSecurity, Reply, Throttle)
from josefk.broker.security.quotas import TimedCoroutine, request_time
from josefk.storage.log import FileRegion
from josefk.wire import errors, headers
from josefk.wire.apis import API_BY_KEY
from josefk.wire.framing import FrameReader, frame
from josefk.wire.types import DecodeError

log = logging.getLogger("josefk.server")

MAX_IN_FLIGHT = 256
# Requests a SASL connection may send before it has authenticated (and to re-authenticate):
# SaslHandshake, ApiVersions, SaslAuthenticate.
SASL_APIS = frozenset({17, 18, 36})

# -- states -----------------------------------------------------------------------------------------
HANDSHAKE = "HANDSHAKE"  # not admitted yet: connection limits, TLS handshake
AUTHENTICATING = "AUTHENTICATING"  # a SASL listener's connection: only SASL_APIS
SASL_TOKENS = "SASL_TOKENS"  # after SaslHandshake v0: frames are bare SASL tokens
READY = "READY"  # authenticated: every request
THROTTLED = "THROTTLED"  # a quota's throttle time: the requests already read are served
CLOSING = "CLOSING"  # close once the responses queued are written; nothing more is read
CLOSED = "CLOSED"


# -- events the core makes of what it is told (the others are security's) --------------------------
class Accepted:
    """The transport is up: admitted, its TLS handshake done."""


class Request:
    """A request of an API outside SASL_APIS."""


class SaslRequest:
    """A request of one of SASL_APIS."""


class Expired:
    """A request outside SASL_APIS after the SASL session expired (KIP-368)."""


class Token:
    """A bare SASL token."""


class Unmute:
    """The throttle time is over."""


class Written:
    """Every response queued before a close-after is written."""


class Close:
    """A bad frame, a refused event, a failed handler or the peer gone: close now."""


_ALWAYS = {CloseAfter: CLOSING, Close: CLOSED}
TABLE = {
    HANDSHAKE: {Accepted: AUTHENTICATING, Close: CLOSED},
    AUTHENTICATING: {SaslRequest: AUTHENTICATING, BareTokens: SASL_TOKENS,
                     Authenticated: READY, **_ALWAYS},
    SASL_TOKENS: {Token: SASL_TOKENS, Authenticated: READY, **_ALWAYS},
    READY: {Request: READY, SaslRequest: READY, BareTokens: SASL_TOKENS, Authenticated: READY,
            Throttle: THROTTLED, **_ALWAYS},
    # a re-authentication with SaslHandshake v0 ends the throttle: tokens must be read
    THROTTLED: {Request: THROTTLED, SaslRequest: THROTTLED, BareTokens: SASL_TOKENS,
                Authenticated: THROTTLED, Throttle: THROTTLED, Unmute: READY, **_ALWAYS},
    # answers still being worked on may carry a throttle: nothing is read anyway
    CLOSING: {Throttle: CLOSING, Written: CLOSED, Close: CLOSED},
    CLOSED: {Close: CLOSED},
}
# Why an event is refused, where more can be said than that its state does not allow it.
REFUSED = {Request: "unexpected request (api key {}) before SASL authentication",
           Expired: "SASL session expired without re-authentication"}

# Derived from the table, for the per-request path.
SERVING = frozenset(s for s, row in TABLE.items() if Request in row)  # every request runs
TIMED = frozenset(s for s, row in TABLE.items() if Throttle in row)  # request quotas apply
TAKES_FRAMES = frozenset(s for s, row in TABLE.items() if {SaslRequest, Token} & row.keys())
READING = TAKES_FRAMES - {THROTTLED}


class RequestContext:
    __slots__ = ("header", "api", "client_host", "connection", "request", "work_s")

    def __init__(self, header, api, client_host, connection):
        self.header = header
        self.api = api
        self.client_host = client_host
        self.connection = connection
        self.request = None
        self.work_s = 0.0  # time the broker worked on the request (request_percentage quotas)

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


class Connection:
    """One client connection's protocol state. ``clock`` gives the time throttles and SASL
    sessions are measured on (the event loop's); ``wake()`` is called when output or a decision
    changed outside `received` (a handler that waited has answered)."""

    def __init__(self, broker, listener, client_host: str = "", client_port: str = "",
                 clock=time.monotonic, wake=lambda: None):
        self.broker = broker
        self.security = ConnectionSecurity(listener)
        self.state = HANDSHAKE
        self.reader = FrameReader(broker.config.int("socket.request.max.bytes"))
        self.client_host = client_host
        self.client_port = client_port
        self.client_software = ("", "")  # name and version, from ApiVersions v3+ (KIP-511)
        self.clock = clock
        self.wake = wake
        self.pending = collections.deque()
        self.tasks = set()
        self.muted_until = 0.0  # while THROTTLED: when it ends, on ``clock``
        self.close_delay = 0.0  # CLOSING: how long after the last response to close
        self.received_at = 0.0  # when the last read arrived (request queue time starts there)

    # -- the table --------------------------------------------------------------------------------
    def _go(self, event, detail=None) -> bool:
        """Take the transition of ``event`` (a class); refused, close and return False."""
        nxt = TABLE[self.state].get(event)
        if nxt is None:
            self.close(REFUSED[event].format(detail) if event in REFUSED
                       else f"{event.__name__} not allowed in state {self.state}")
            return False
        self.state = nxt
        return True

    @property
    def authenticated(self) -> bool:
        return self.state in SERVING

    @property
    def reading(self) -> bool:
        """Whether the transport should read: the state takes frames and not too many of the
        client's requests are still being answered."""
        return self.state in READING and len(self.pending) <= MAX_IN_FLIGHT

    # -- what the transport tells ---------------------------------------------------------------
    def accepted(self, ssl_object=None, refused: str | None = None) -> None:
        """The transport is up, its TLS handshake done; ``refused``: why a connection limit does
        not admit it."""
        if refused:
            return self.close(refused)
        try:
            self.security.on_tls_handshake(ssl_object)
        except ValueError as e:
            return self.close(str(e))
        self._go(Accepted)
        if not self.security.listener.sasl:  # its principal is known: ANONYMOUS or the TLS one
            self._go(Authenticated)

    def received(self, nbytes: int) -> None:
        """``nbytes`` were read into the last ``reader.get_buffer()``: run the requests complete."""
        self.received_at = time.monotonic()
        try:
            frames = self.reader.buffer_updated(nbytes)
        except DecodeError as e:
            return self.close(f"bad frame: {e}")
        for f in frames:
            if self.state not in TAKES_FRAMES:  # closing: the rest is not read
                return
            self._frame(f)

    def unmute(self, until: float) -> None:
        """The timer armed for ``muted_until`` == ``until`` fired."""
        if self.muted_until == until and self.state is THROTTLED:
            self.muted_until = 0.0
            self._go(Unmute)

    def written(self) -> None:
        """CLOSING and everything handed out is written: the transport closes after
        ``close_delay``."""
        self._go(Written)

    def close(self, reason: str | None = None) -> None:
        """Close now (the transport aborts); ``reason`` is logged."""
        if reason is not None and self.state is not CLOSED:
            log.warning("closing connection from %s: %s", self.client_host, reason)
        self.state = CLOSED

    def connection_lost(self) -> None:
        self.state = CLOSED
        self.broker.share.connection_closed(self)
        for t in self.tasks:
            t.cancel()
        for slot in self.pending:
            for c in slot.chunks or ():
                if type(c) is FileRegion:
                    c.close()
        self.pending.clear()

    # -- output -----------------------------------------------------------------------------------
    def take_output(self):
        """The chunks (bytes, file regions) of every response next in order, or None."""
        pending = self.pending
        if not (pending and pending[0].done):
            return None
        out = []
        while pending and pending[0].done:
            out += pending.popleft().chunks
        return out

    # -- requests ---------------------------------------------------------------------------------
    def _frame(self, buf):
        state = self.state
        if state is SASL_TOKENS:
            return self._token(bytes(buf))
        broker = self.broker
        timed = bool(broker.quotas.quotas) and state in TIMED  # request_percentage
        start = time.perf_counter() if timed else 0.0
        try:
            h = headers.peek_request_header(buf)
        except DecodeError as e:
            return self.close(f"bad request header: {e}")
        api = API_BY_KEY.get(h.api_key)
        handler = broker.handlers.get(h.api_key)
        if api is None or handler is None:
            return self.close(f"unknown api key {h.api_key}")
        if h.api_version not in api.versions:
            if h.api_key == 18:
                return self._unsupported_api_versions(h)
            return self.close(f"unsupported version {h.api_version} of {api.name}")
        if state not in SERVING or self.security.expires_at is not None:
            event = SaslRequest if h.api_key in SASL_APIS else Request
            if event is Request and self.security.expires_at is not None \
                    and self.clock() > self.security.expires_at:
                event = Expired
            if not self._go(event, h.api_key):
                return
        try:
            h, pos = headers.read_request_header(buf, api.request_header_version(h.api_version), h)
            req, _end = api.Request.decode(buf, h.api_version, pos)
        except DecodeError as e:
            return self.close(f"cannot decode {api.name} v{h.api_version}: {e}")
        ctx = RequestContext(h, api, self.client_host, self)
        ctx.request = req
        try:
            result = handler(broker, ctx, req)
            if type(result) is CoroutineType:  # not asyncio.iscoroutine: ABC checks per call
                # its answer, or a Task while it waits (whose later steps quotas time too)
                result = eager.start(TimedCoroutine(result, ctx).__await__() if timed else result)
        except Exception:
            log.exception("%s handler failed", api.name)
            return self.close(f"{api.name} handler failed")
        if timed:
            ctx.work_s = time.perf_counter() - start
        if result is NO_RESPONSE:
            if timed:
                request_time(broker, ctx, None, ctx.work_s)
            return
        slot = _Slot()
        self.pending.append(slot)
        if not isinstance(result, asyncio.Task):
            return self._complete(slot, ctx, result, timed)
        task = result
        self.tasks.add(task)
        task.add_done_callback(lambda t, s=slot, c=ctx: self._finished(t, s, c))

    def _finished(self, task, slot, ctx):
        self.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved even when nobody is left to answer
        if self.state is CLOSED:
            return
        if exc is not None:
            log.error("%s handler failed", ctx.api.name, exc_info=exc)
            self.close(f"{ctx.api.name} handler failed")
        else:
            self._complete(slot, ctx, task.result(), bool(self.broker.quotas.quotas)
                           and self.state in TIMED)
        self.wake()

    def _complete(self, slot, ctx, result, timed: bool):
        """Encode ``result`` into ``slot`` and take the event it brings."""
        event = None
        if type(result) is Reply:
            result, event = result.response, result.event
        throttle = 0
        if result is NO_RESPONSE:
            slot.chunks = ()
        else:
            v = ctx.version
            if timed:
                throttle = request_time(self.broker, ctx, result, ctx.work_s)
                start = time.perf_counter()
            hdr = headers.response_header(ctx.header.correlation_id,
                                          ctx.api.response_header_version(v))
            try:
                slot.chunks = frame(result.encode(v, hdr))
            except Exception:
                log.exception("cannot encode %s v%d response", ctx.api.name, v)
                return self.close("response encoding failed")
            if timed:  # the encoding counts too, against the requests to come
                request_time(self.broker, ctx, None, time.perf_counter() - start)
        slot.done = True
        if event is not None:
            self._event(event)
        if throttle:
            self._throttle(throttle)

    def _event(self, event) -> None:
        kind = type(event)
        if kind is Throttle:
            self._throttle(event.ms)
        elif kind is CloseAfter:
            if self._go(CloseAfter):
                self.close_delay = event.delay_s
                self.muted_until = 0.0
        elif kind is Authenticated:
            if self._go(Authenticated):
                sec = self.security
                sec.principal = event.principal
                lifetime = sec.listener.reauth_ms
                sec.expires_at = self.clock() + lifetime / 1000 if lifetime > 0 else None
        elif kind is BareTokens:
            if self._go(BareTokens):
                self.muted_until = 0.0
        else:
            self.close(f"unknown connection event {kind.__name__}")

    def _throttle(self, ms: int) -> None:
        """Read nothing more from this client for ``ms`` (a quota's throttle time)."""
        if not self._go(Throttle) or self.state is not THROTTLED:
            return
        until = self.clock() + ms / 1000
        if until > self.muted_until:
            self.muted_until = until

    def _token(self, token: bytes):
        """A bare SASL token after SaslHandshake v0, answered with a bare frame in turn."""
        self._go(Token)
        slot = _Slot()
        self.pending.append(slot)
        try:
            result = eager.start(sasl_token(self.broker, self.security, token))
        except Exception:
            log.exception("SASL exchange failed")
            return self.close("SASL exchange failed")
        if not isinstance(result, asyncio.Task):
            return self._token_answered(slot, *result)
        self.tasks.add(result)
        result.add_done_callback(lambda t: self._token_finished(t, slot))

    def _token_finished(self, task, slot):
        self.tasks.discard(task)
        if task.cancelled() or self.state is CLOSED:
            return
        if task.exception() is not None:
            log.error("SASL exchange failed", exc_info=task.exception())
            self.close("SASL exchange failed")
        else:
            self._token_answered(slot, *task.result())
        self.wake()

    def _token_answered(self, slot, reply, event):
        slot.chunks = frame([reply]) if reply is not None else ()
        slot.done = True
        if event is not None:
            self._event(event)

    def _unsupported_api_versions(self, h):
        api = API_BY_KEY[18]
        resp = api.Response(error_code=errors.UNSUPPORTED_VERSION,
                            api_keys=self.broker.api_versions)
        slot = _Slot()
        self.pending.append(slot)
        ctx = RequestContext(headers.RequestHeader(18, 0, h.correlation_id), api,
                             self.client_host, self)
        self._complete(slot, ctx, resp, False)
