"""An asynchronous connection from this broker to another one, for inter-broker requests.

The controller uses one per broker (LeaderAndIsr, UpdateMetadata, StopReplica), replica
fetchers one per source broker (Fetch, OffsetForLeaderEpoch), and brokers one to the controller
(AlterPartition, ControlledShutdown). Requests are pipelined; responses are matched by
correlation id. A broken connection fails every request in flight with ``ChannelError`` and is
reopened by the next request. Responses are read straight into their own buffer
(`wire.framing.FrameReader` behind a BufferedProtocol): a replica fetcher's megabytes of
records are copied once, by the read, not through a stream's buffer.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from josefk.broker.security.sasl import ClientExchange
from josefk.wire import headers
from josefk.wire.apis import SASL_AUTHENTICATE, SASL_HANDSHAKE
from josefk.wire.framing import FrameReader, FrameTooLarge
from josefk.wire.types import i32

log = logging.getLogger("josefk.channel")


class Channels(Protocol):
    """Inter-broker channels by purpose (`control.cluster.ClusterMember` keeps them)."""

    def channel(self, purpose: str, node_id: int): ...


class ChannelError(Exception):
    pass


class BrokerChannel:
    def __init__(self, node_id: int, host: str, port: int, client_id: str, security=None):
        self.node_id = node_id
        self.security = security  # broker.sasl.InterBrokerSecurity: TLS and SASL, or None
        self.host, self.port = host, port
        self.client_id = client_id
        self._writer = None  # the connection's transport, once open (and authenticated)
        self._connecting = None
        self._pending: dict[int, tuple] = {}
        self._next_id = 0
        self.closed = False

    def retarget(self, host: str, port: int) -> None:
        """Point at a new endpoint (a broker re-registered elsewhere); reconnects lazily."""
        if (host, port) != (self.host, self.port):
            self.host, self.port = host, port
            self._drop(ChannelError("endpoint changed"))

    async def request(self, api, version: int, req, timeout: float = 30.0):
        """Send ``req`` and return the decoded response. Raises ChannelError on any failure."""
        if self.closed:
            raise ChannelError("channel closed")
        return await self._exchange(await self._connect(timeout), api, version, req, timeout)

    async def _exchange(self, writer, api, version: int, req, timeout: float):
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        corr = self._next_id
        out = bytearray()
        headers.write_request_header(out, headers.RequestHeader(api.key, version, corr,
                                                                self.client_id),
                                     api.request_header_version(version))
        chunks = req.encode(version, out)
        size = sum(len(c) for c in chunks)
        fut = asyncio.get_running_loop().create_future()
        self._pending[corr] = (fut, api, version)
        try:
            writer.writelines([i32.pack(size), *chunks])
        except (OSError, RuntimeError) as e:  # the connection closed under us (uvloop: Runtime)
            self._pending.pop(corr, None)
            self._drop(ChannelError(str(e)))
            raise ChannelError(f"{api.name} to broker {self.node_id}: connection closed") from None
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self._pending.pop(corr, None)
            self._drop(ChannelError("request timed out"))  # the stream is now out of step
            raise ChannelError(f"{api.name} to broker {self.node_id} timed out") from None

    async def _connect(self, timeout):
        if self._writer is not None:
            return self._writer
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open(timeout))
            # its failure is raised to whoever awaits it; if they were all cancelled (the
            # broker stopping), it is still retrieved here
            self._connecting.add_done_callback(
                lambda f: f.cancelled() or f.exception())
        try:
            return await asyncio.shield(self._connecting)
        finally:
            if self._connecting is not None and self._connecting.done():
                self._connecting = None

    async def _open(self, timeout):
        ctx = self.security.ssl_context if self.security is not None else None
        try:
            writer, _ = await asyncio.wait_for(asyncio.get_running_loop().create_connection(
                lambda: _ChannelProtocol(self), self.host, self.port, ssl=ctx,
                server_hostname=self.host if ctx else None), timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise ChannelError(f"cannot connect to broker {self.node_id} at "
                               f"{self.host}:{self.port}: {e}") from None
        if self.security is not None and self.security.mechanism:
            try:
                await self._authenticate(writer, timeout)
            except ChannelError:
                writer.close()
                raise
        self._writer = writer
        return writer

    async def _authenticate(self, writer, timeout):
        """SaslHandshake and SaslAuthenticate before any other request."""
        sec = self.security
        resp = await self._exchange(writer, SASL_HANDSHAKE, 1,
                                    SASL_HANDSHAKE.Request(mechanism=sec.mechanism), timeout)
        if resp.error_code:
            raise ChannelError(f"broker {self.node_id} refused SASL mechanism {sec.mechanism}")
        exchange = ClientExchange(sec.mechanism, sec.username, sec.password)
        token = exchange.first()
        while token is not None:
            resp = await self._exchange(writer, SASL_AUTHENTICATE, 1,
                                        SASL_AUTHENTICATE.Request(auth_bytes=token), timeout)
            if resp.error_code:
                raise ChannelError(f"authentication to broker {self.node_id} failed: "
                                   f"{resp.error_message}")
            try:
                token = exchange.next(resp.auth_bytes)
            except Exception as e:  # noqa: BLE001 - a bad server answer (scramp raises its own)
                raise ChannelError(f"bad SASL answer from broker {self.node_id}: {e}") from None

    def _response(self, data) -> None:
        """One response frame: to the request waiting for its correlation id."""
        corr = i32.unpack_from(data, 0)[0]
        entry = self._pending.pop(corr, None)
        if entry is None:
            return
        fut, api, version = entry
        if fut.done():
            return
        try:
            _, pos = headers.read_response_header(data, api.response_header_version(version))
            resp, _ = api.Response.decode(data, version, pos)
        except Exception as e:  # noqa: BLE001 - a bad answer fails that request only
            fut.set_exception(ChannelError(f"bad {api.name} response: {e}"))
        else:
            fut.set_result(resp)

    def _lost(self, transport, reason) -> None:
        if self._writer is transport:
            self._drop(ChannelError(f"connection to broker {self.node_id} lost: {reason}"))

    def _drop(self, exc):
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        pending, self._pending = self._pending, {}
        for fut, _api, _v in pending.values():
            if not fut.done():
                fut.set_exception(exc)

    def close(self):
        self.closed = True
        self._drop(ChannelError("channel closed"))


class _ChannelProtocol(asyncio.BufferedProtocol):
    """A channel's socket: response frames read into their own buffers, handed to it."""

    def __init__(self, channel: BrokerChannel):
        self.channel = channel
        self.frames = FrameReader(max_size=0x7FFFFFFF)  # as large as the size field says
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes):
        try:
            frames = self.frames.buffer_updated(nbytes)
        except FrameTooLarge as e:
            self.transport.abort()
            self.channel._lost(self.transport, e)
            return
        for data in frames:
            self.channel._response(data)

    def eof_received(self):
        return False  # the broker closed its side: close ours

    def connection_lost(self, exc):
        self.channel._lost(self.transport, exc or "closed by the broker")
