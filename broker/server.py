"""The connection loop: frames in, dispatch, responses out in request order.

The server knows no API's fields: it decodes the header, asks `broker.dispatch` for the handler,
decodes the body with the API's compiled codec, and encodes whatever response object the
handler produced. A malformed frame or request closes that one connection.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from types import CoroutineType

from josefk.broker import eager
from josefk.broker.handlers import NO_RESPONSE
from josefk.broker.handlers.sasl import sasl_token
from josefk.broker.limits import ConnectionLimits
from josefk.broker.security.quotas import TimedCoroutine, request_time
from josefk.broker.security.listeners import ConnectionSecurity
from josefk.storage.log import FileRegion
from josefk.wire import errors, headers
from josefk.wire.apis import API_BY_KEY
from josefk.wire.framing import FrameReader, frame
from josefk.wire.types import DecodeError

log = logging.getLogger("josefk.server")

MAX_IN_FLIGHT = 256
# When the socket is full, this much of a file region is read into the transport, whose
# draining then says when sendfile can go on (rather than reading all the rest into memory).
SENDFILE_WAIT_PIECE = 64 * 1024


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


class Connection(asyncio.BufferedProtocol):
    def __init__(self, broker, listener, limits: ConnectionLimits):
        self.broker = broker
        self.limits = limits
        self.security = ConnectionSecurity(listener)
        self.closing = False  # close once every queued response is written (then wait close_delay)
        self.close_delay = 0.0
        self.muted_until = 0.0  # loop time until which a quota throttles the client (KIP-219)
        self.reader = FrameReader(broker.config.int("socket.request.max.bytes"))
        self.transport = None
        self.loop = None  # asyncio.get_running_loop() costs a getpid() system call per use
        self.sock_fd = -1
        self.client_host = ""
        self.client_port = ""
        self.client_software = ("", "")  # name and version, from ApiVersions v3+ (KIP-511)
        self.pending = collections.deque()
        self.unsent = collections.deque()  # chunks of answers waiting for the socket (`_write`)
        self.draining = False  # waiting for the transport to drain before sending ``unsent``
        self.closed = False
        self.admitted = False
        self.paused = False
        self.write_blocked = False
        self.memory_wait = False  # paused until the pool can hold the request being received
        self.reserved = 0  # bytes of the memory pool held for the request being received
        self.last_active = 0.0
        self.batching = False
        self.tasks = set()
        self.received_at = 0.0  # when the last read arrived (request queue time starts there)

    # -- asyncio callbacks ----------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        peer = transport.get_extra_info("peername")
        self.client_host = peer[0] if peer else ""
        self.client_port = str(peer[1]) if peer and len(peer) > 1 else ""
        refused = self.limits.admit(self.client_host)
        if refused:
            return self.abort(refused)
        self.admitted = True
        self.last_active = self.loop.time()
        sock = transport.get_extra_info("socket")
        # Record bytes go straight from segment files to a plain TCP socket (sendfile).
        plain = transport.get_extra_info("ssl_object") is None
        self.sock_fd = sock.fileno() if sock is not None and plain else -1
        self.broker.connections.add(self)
        try:
            self.security.on_tls_handshake(transport.get_extra_info("ssl_object"))
        except ValueError as e:
            self.abort(str(e))

    def connection_lost(self, exc):
        self.closed = True
        if self.admitted:
            self.limits.forget(self.client_host)
        self.limits.pool.release(self.reserved)
        self.reserved = 0
        self.broker.connections.discard(self)
        self.broker.share.connection_closed(self)
        for t in self.tasks:
            t.cancel()
        for chunks in (self.unsent, *(slot.chunks or () for slot in self.pending)):
            for c in chunks:
                if type(c) is FileRegion:
                    c.close()
        self.pending.clear()
        self.unsent.clear()

    def pause_writing(self):
        self.write_blocked = True
        self._update_reading()

    def resume_writing(self):
        self.write_blocked = False
        if self.draining and not self.closed:
            self.draining = False
            self.last_active = self.loop.time()
            self.transport.set_write_buffer_limits()
            self._write(())
            self._close_if_done()
        self._update_reading()

    def get_buffer(self, sizehint):
        return self.reader.get_buffer()  # reads land in the request's own buffer

    def buffer_updated(self, nbytes):
        self.last_active = self.loop.time()
        self.received_at = time.monotonic()
        try:
            frames = self.reader.buffer_updated(nbytes)
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
        self._reserve()
        self._update_reading()

    def _reserve(self):
        """Hold pool memory for the request being received, or pause until there is some."""
        need = self.reader.pending_size
        if self.closed or need == self.reserved or self.memory_wait:
            return
        self.limits.pool.release(self.reserved)
        self.reserved = 0
        if need and not self.limits.pool.try_allocate(need):
            self.memory_wait = True
            self.limits.pool.waiting.append(self._memory_released)
            return
        self.reserved = need

    def _memory_released(self):
        self.memory_wait = False
        self._reserve()
        self._update_reading()

    # -- request handling -----------------------------------------------------------------------
    def handle_frame(self, buf):
        if self.security.bare_tokens:
            return self._handle_sasl_token(bytes(buf))
        timed = bool(self.broker.quotas.quotas)  # request_percentage needs the time spent
        start = time.perf_counter() if timed else 0.0
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
            h, pos = headers.read_request_header(buf, api.request_header_version(h.api_version), h)
            req, _end = api.Request.decode(buf, h.api_version, pos)
        except DecodeError as e:
            return self.abort(f"cannot decode {api.name} v{h.api_version}: {e}")
        ctx = RequestContext(h, api, self.client_host, self)
        ctx.request = req
        try:
            result = handler(self.broker, ctx, req)
            if type(result) is CoroutineType:  # not asyncio.iscoroutine: ABC checks per call
                # its answer, or a Task while it waits (whose later steps quotas time too)
                result = eager.start(TimedCoroutine(result, ctx).__await__() if timed else result)
        except Exception:
            log.exception("%s handler failed", api.name)
            return self.abort(f"{api.name} handler failed")
        if timed:
            ctx.work_s = time.perf_counter() - start
        if result is NO_RESPONSE:
            if timed:
                request_time(self.broker, ctx, None, ctx.work_s)
            return
        slot = _Slot()
        self.pending.append(slot)
        if not isinstance(result, asyncio.Task):
            return self._complete(slot, ctx, result)
        task = result
        self.tasks.add(task)
        task.add_done_callback(lambda t, s=slot, c=ctx: self._finished(t, s, c))

    def _handle_sasl_token(self, token: bytes):
        """A bare SASL token after SaslHandshake v0, answered with a bare frame in turn."""
        slot = _Slot()
        self.pending.append(slot)
        task = asyncio.ensure_future(sasl_token(self.broker, self, token))
        self.tasks.add(task)
        task.add_done_callback(lambda t: self._token_answered(t, slot))

    def _token_answered(self, task, slot):
        self.tasks.discard(task)
        if task.cancelled() or self.closed:
            return
        if task.exception() is not None:
            log.error("SASL exchange failed", exc_info=task.exception())
            return self.abort("SASL exchange failed")
        reply = task.result()
        slot.chunks = frame([reply]) if reply is not None else ()
        slot.done = True
        self._flush()

    def _finished(self, task, slot, ctx):
        self.tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved even when nobody is left to answer
        if self.closed:
            return
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
        timed = bool(self.broker.quotas.quotas)
        if timed:
            request_time(self.broker, ctx, response, ctx.work_s)
            start = time.perf_counter()
        hdr = headers.response_header(ctx.header.correlation_id,
                                      ctx.api.response_header_version(v))
        try:
            slot.chunks = frame(response.encode(v, hdr))
        except Exception:
            log.exception("cannot encode %s v%d response", ctx.api.name, v)
            return self.abort("response encoding failed")
        if timed:  # the encoding counts too, against the requests to come
            request_time(self.broker, ctx, None, time.perf_counter() - start)
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
            self.last_active = self.loop.time()
            self._write(out)
        if self._close_if_done():
            return
        if self.paused:
            self._update_reading()

    def _close_if_done(self) -> bool:
        """After `close_after_response`, close once every answer is written."""
        if not self.closing or self.closed or self.pending or self.unsent:
            return False
        self.closed = True
        self.loop.call_later(self.close_delay, self.transport.close)
        return True

    def _write(self, chunks):
        """Write buffers as they are and file regions with sendfile, in order. What the socket
        cannot take now waits in ``unsent`` until the transport has drained (`resume_writing`),
        so records stay out of memory even when the client reads slower than we send."""
        unsent = self.unsent
        unsent.extend(chunks)
        if self.draining:
            return
        run = []
        while unsent:
            c = unsent.popleft()
            if type(c) is not FileRegion:
                run.append(c)
                continue
            if run:
                self.transport.writelines(run)
                run = []
            if self._send_region(c):
                if self.closed:  # aborted
                    return
                continue
            unsent.appendleft(c)
            if self.transport.get_write_buffer_size():
                # Limits of 0: pause_writing now, resume_writing once the buffer is empty.
                self.draining = True
                self.transport.set_write_buffer_limits(0, 0)
                return
        if run:
            self.transport.writelines(run)

    def _send_region(self, r: FileRegion) -> bool:
        """Send what the socket takes of ``r`` with sendfile while the transport has nothing
        queued (so order holds); False when some is left (``r`` then holds the rest). When the
        socket is full with the transport empty, a small piece goes through the transport, so
        that its draining tells us when to go on."""
        try:
            if self.sock_fd < 0:  # TLS: the bytes go through the transport
                return self._queue_piece(r, r.length)
            if self.transport.get_write_buffer_size():
                return False
            try:
                while r.length:
                    n = os.sendfile(self.sock_fd, r.fd, r.offset, r.length)
                    if n == 0:
                        return self._truncated(r)
                    r.offset += n
                    r.length -= n
            except BlockingIOError:
                return self._queue_piece(r, min(r.length, SENDFILE_WAIT_PIECE))
        except OSError as e:
            self.abort(f"cannot send records: {e}")
            r.close()
            return True
        r.close()
        return True

    def _queue_piece(self, r: FileRegion, n: int) -> bool:
        """Read the first ``n`` bytes of ``r`` into the transport; True when that was all."""
        piece = os.pread(r.fd, n, r.offset)
        if len(piece) != n:
            return self._truncated(r)
        self.transport.write(piece)
        r.offset += n
        r.length -= n
        if r.length:
            return False
        r.close()
        return True

    def _truncated(self, r: FileRegion) -> bool:
        r.close()
        self.abort("segment truncated while it was being sent")
        return True

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
        paused = (self.write_blocked or self.memory_wait or len(self.pending) > MAX_IN_FLIGHT
                  or self.muted_until > 0)
        if paused != self.paused and not (self.closed or self.closing):
            self.paused = paused
            (self.transport.pause_reading if paused else self.transport.resume_reading)()

    def idle_since(self, now: float) -> float:
        """Seconds without bytes in or out, 0 while a request is being handled (a half-sent
        request is no excuse: that is what a slowloris does)."""
        if self.pending or self.memory_wait:
            return 0.0
        return now - self.last_active

    def close(self):
        self.closed = True
        self.transport.close()

    def mute(self, ms: int):
        """Read nothing more from this client for ``ms`` (a quota's throttle time)."""
        loop = self.loop
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


async def serve(broker, listener, host: str, port: int, limits: ConnectionLimits):
    """Accept connections on one listener (``broker.security.ListenerSecurity``); TLS listeners
    wrap the sockets with the listener's context. ``limits`` are the broker's, across its
    listeners."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.create_server(lambda: Connection(broker, listener, limits), host, port,
                                        reuse_address=True, backlog=1024,
                                        ssl=listener.ssl_context)
    except OSError as e:  # Kafka's words
        raise OSError(e.errno, f"Socket server failed to bind to {host}:{port}: "
                               f"{os.strerror(e.errno) if e.errno else e}.") from None
