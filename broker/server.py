"""The transport of client connections: bytes from the socket into the connection core
(`broker.connection`, which decodes, dispatches and keeps the state), what it hands out onto
the socket in order (file regions with ``sendfile``), and its decisions carried out: reading
paused or resumed, the throttle timer, the close. Besides, the transport's own flow control:
the request memory pool, write backpressure, idle time.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import os

from josefk.broker.connection import CLOSED, CLOSING, Connection
from josefk.broker.limits import ConnectionLimits
from josefk.storage.log import FileRegion

log = logging.getLogger("josefk.server")

# When the socket is full, this much of a file region is read into the transport, whose
# draining then says when sendfile can go on (rather than reading all the rest into memory).
SENDFILE_WAIT_PIECE = 64 * 1024


class SocketConnection(asyncio.BufferedProtocol):
    """One client socket, driving its `broker.connection.Connection` (``core``)."""

    def __init__(self, broker, listener, limits: ConnectionLimits):
        self.broker = broker
        self.listener = listener
        self.limits = limits
        self.core = None
        self.transport = None
        self.loop = None  # asyncio.get_running_loop() costs a getpid() system call per use
        self.sock_fd = -1
        self.client_host = ""
        self.unsent = collections.deque()  # chunks of answers waiting for the socket (`_write`)
        self.draining = False  # waiting for the transport to drain before sending ``unsent``
        self.closed = False
        self.admitted = False
        self.paused = False
        self.write_blocked = False
        self.memory_wait = False  # paused until the pool can hold the request being received
        self.reserved = 0  # bytes of the memory pool held for the request being received
        self.unmute_at = 0.0  # the core's ``muted_until`` a timer is armed for
        self.last_active = 0.0

    # -- asyncio callbacks ----------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        loop = self.loop = asyncio.get_running_loop()
        peer = transport.get_extra_info("peername")
        host = self.client_host = peer[0] if peer else ""
        port = str(peer[1]) if peer and len(peer) > 1 else ""
        self.core = Connection(self.broker, self.listener, host, port, loop.time, self._pump)
        refused = self.limits.admit(host)
        if not refused:
            self.admitted = True
            self.last_active = loop.time()
            sock = transport.get_extra_info("socket")
            # Record bytes go straight from segment files to a plain TCP socket (sendfile).
            plain = transport.get_extra_info("ssl_object") is None
            self.sock_fd = sock.fileno() if sock is not None and plain else -1
            self.broker.connections.add(self)
        self.core.accepted(transport.get_extra_info("ssl_object"), refused)
        self._pump()

    def connection_lost(self, exc):
        self.closed = True
        if self.admitted:
            self.limits.forget(self.client_host)
        self.limits.pool.release(self.reserved)
        self.reserved = 0
        self.broker.connections.discard(self)
        self.core.connection_lost()
        for c in self.unsent:
            if type(c) is FileRegion:
                c.close()
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
        self._pump()

    def get_buffer(self, sizehint):
        return self.core.reader.get_buffer()  # reads land in the request's own buffer

    def buffer_updated(self, nbytes):
        self.last_active = self.loop.time()
        self.core.received(nbytes)
        self._reserve()
        self._pump()  # answers to this read go out together, after it

    def _reserve(self):
        """Hold pool memory for the request being received, or pause until there is some."""
        need = self.core.reader.pending_size
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

    # -- the core's decisions -------------------------------------------------------------------
    def _pump(self):
        """Carry out what the core decided: write every response next in order in one call,
        close, read or not."""
        if self.closed:
            return
        core = self.core
        if core.state is CLOSED:
            self.closed = True
            return self.transport.abort()
        out = core.take_output()
        if out:
            self.last_active = self.loop.time()
            self._write(out)
            if self.closed:  # sendfile failed
                return
        if not self._close_if_done():
            self._update_reading()

    def _close_if_done(self) -> bool:
        """After a close-after, close once every answer is written (and the delay passed)."""
        core = self.core
        if core.state is not CLOSING or self.closed or core.pending or self.unsent:
            return False
        self.closed = True
        core.written()
        self.loop.call_later(core.close_delay, self.transport.close)
        return True

    def _update_reading(self):
        """Stop reading while the core says so (throttled, closing, too many requests in
        flight), the client is not reading its answers or the memory pool is full."""
        core = self.core
        paused = self.write_blocked or self.memory_wait or not core.reading
        if paused != self.paused and not self.closed:
            self.paused = paused
            (self.transport.pause_reading if paused else self.transport.resume_reading)()
        until = core.muted_until
        if until and until != self.unmute_at:
            self.unmute_at = until
            self.loop.call_at(until, self._unmute, until)

    def _unmute(self, until):
        self.core.unmute(until)
        self._pump()

    def _fail(self, reason: str):
        self.core.close(reason)
        self.closed = True
        self.transport.abort()

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
            self._fail(f"cannot send records: {e}")
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
        self._fail("segment truncated while it was being sent")
        return True

    def idle_since(self, now: float) -> float:
        """Seconds without bytes in or out, 0 while a request is being handled (a half-sent
        request is no excuse: that is what a slowloris does)."""
        if self.core.pending or self.memory_wait:
            return 0.0
        return now - self.last_active

    def close(self):
        self.core.close()
        self.closed = True
        self.transport.close()


async def serve(broker, listener, host: str, port: int, limits: ConnectionLimits):
    """Accept connections on one listener (``broker.security.ListenerSecurity``); TLS listeners
    wrap the sockets with the listener's context. ``limits`` are the broker's, across its
    listeners."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.create_server(lambda: SocketConnection(broker, listener, limits), host, port,
                                        reuse_address=True, backlog=1024,
                                        ssl=listener.ssl_context)
    except OSError as e:  # Kafka's words
        raise OSError(e.errno, f"Socket server failed to bind to {host}:{port}: "
                               f"{os.strerror(e.errno) if e.errno else e}.") from None
