"""The connection core (`broker.connection`) without sockets, state by state: bytes fed into
its reader, frames and decisions (reading, mute, close) read back, on a real in-process broker
with its real handlers (PLAIN credentials from the listener's JAAS config), a clock of the
test's own."""
from __future__ import annotations

import asyncio
import struct

import pytest

from josefk.broker import connection as core
from josefk.broker.app import Broker
from josefk.broker.config import BrokerConfig
from josefk.broker.connection import (AUTHENTICATING, CLOSED, CLOSING, HANDSHAKE, READY,
                                      SASL_TOKENS, TABLE, THROTTLED, Connection)
from josefk.broker.handlers import NO_RESPONSE
from josefk.broker.security.listeners import ListenerSecurity, Reply, Throttle, listeners
from josefk.broker.security.quotas import CLIENT, REQUEST
from josefk.wire import errors, headers
from josefk.wire.apis import API_VERSIONS, METADATA, PRODUCE, SASL_AUTHENTICATE, SASL_HANDSHAKE

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
        'password="alice-secret" user_alice="alice-secret";')
ALICE = b"\0alice\0alice-secret"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def broker(tmp_path):
    return Broker(BrokerConfig({
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:2",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": "60000",
        "connection.failed.authentication.delay.ms": "300"}))


def listener(broker, name):
    return next(ListenerSecurity(broker.config, e) for e in listeners(broker.config)
                if e.listener == name)


def connect(broker, name="PLAINTEXT", clock=None, wake=lambda: None) -> Connection:
    c = Connection(broker, listener(broker, name), "127.0.0.1", "5000", clock or Clock(), wake)
    c.accepted(None)
    return c


def request(api, version, corr, **fields) -> bytes:
    out = bytearray()
    headers.write_request_header(out, headers.RequestHeader(api.key, version, corr, "test"),
                                 api.request_header_version(version))
    body = b"".join(bytes(c) for c in api.Request(**fields).encode(version, out))
    return struct.pack(">i", len(body)) + body


def metadata(corr, version=1):
    return request(METADATA, version, corr, topics=[], allow_auto_topic_creation=False)


def handshake(corr, mechanism="PLAIN", version=1):
    return request(SASL_HANDSHAKE, version, corr, mechanism=mechanism)


def authenticate(corr, token=ALICE):
    return request(SASL_AUTHENTICATE, 2, corr, auth_bytes=token)


def feed(c: Connection, data: bytes) -> None:
    """Bytes in, as reads of whatever the reader's buffer takes."""
    while data:
        buf = c.reader.get_buffer()
        n = min(len(buf), len(data))
        buf[:n] = data[:n]
        data = data[n:]
        c.received(n)


def frames(c: Connection) -> list[bytes]:
    out = b"".join(bytes(x) for x in c.take_output() or ())
    found = []
    while out:
        (size,) = struct.unpack_from(">i", out)
        found.append(out[4:4 + size])
        out = out[4 + size:]
    return found


def answer(data: bytes, api, version):
    corr, pos = headers.read_response_header(data, api.response_header_version(version))
    return corr, api.Response.decode(data, version, pos)[0]


# -- the table ------------------------------------------------------------------------------------
def test_every_state_has_a_row_and_every_row_leads_to_a_state():
    assert set(TABLE) == {HANDSHAKE, AUTHENTICATING, SASL_TOKENS, READY, THROTTLED, CLOSING,
                          CLOSED}
    assert all(nxt in TABLE for row in TABLE.values() for nxt in row.values())
    assert all(row.get(core.Close) is CLOSED for row in TABLE.values())


@pytest.mark.parametrize("state", sorted(TABLE))
def test_an_event_a_state_does_not_allow_closes_the_connection(broker, state, caplog):
    events = {e for row in TABLE.values() for e in row} | {core.Expired}
    for event in sorted(events - TABLE[state].keys(), key=lambda e: e.__name__):
        c = connect(broker)
        c.state = state
        assert c._go(event, 3) is False
        assert c.state is CLOSED
    for event, nxt in TABLE[state].items():
        c = connect(broker)
        c.state = state
        assert c._go(event) is True and c.state is nxt


# -- HANDSHAKE ------------------------------------------------------------------------------------
def test_nothing_is_read_before_the_transport_is_accepted(broker):
    c = Connection(broker, listener(broker, "PLAINTEXT"))
    assert c.state is HANDSHAKE and not c.reading


def test_a_connection_over_a_limit_is_closed_at_once(broker, caplog):
    c = Connection(broker, listener(broker, "PLAINTEXT"), "10.0.0.1")
    c.accepted(None, refused="max.connections.per.ip (1) reached for 10.0.0.1")
    assert c.state is CLOSED and not c.reading
    assert "closing connection from 10.0.0.1: max.connections.per.ip" in caplog.text


def test_a_plaintext_connection_is_authenticated_at_once_as_anonymous(broker):
    c = connect(broker)
    assert c.state is READY and c.reading and c.authenticated
    assert c.security.principal == "User:ANONYMOUS"


def test_a_sasl_connection_starts_authenticating(broker):
    c = connect(broker, "SASL_PLAINTEXT")
    assert c.state is AUTHENTICATING and c.reading and not c.authenticated


# -- READY: requests in, responses out in order ---------------------------------------------------
def test_pipelined_requests_are_answered_in_order_in_one_output(broker):
    c = connect(broker)
    feed(c, metadata(7) + request(API_VERSIONS, 0, 8) + metadata(9))
    out = frames(c)
    assert [struct.unpack_from(">i", f)[0] for f in out] == [7, 8, 9]
    assert c.take_output() is None and not c.pending
    assert c.state is READY


def test_a_request_split_across_reads_is_answered_once_complete(broker):
    c = connect(broker)
    data = metadata(1)
    feed(c, data[:5])
    assert c.take_output() is None
    feed(c, data[5:])
    assert answer(frames(c)[0], METADATA, 1)[0] == 1


def test_an_unsupported_api_versions_version_is_answered_v0(broker):
    c = connect(broker)
    out = bytearray()
    headers.write_request_header(out, headers.RequestHeader(18, 99, 4, "test"), 1)
    feed(c, struct.pack(">i", len(out)) + out)
    corr, resp = answer(frames(c)[0], API_VERSIONS, 0)
    assert corr == 4 and resp.error_code == errors.UNSUPPORTED_VERSION and resp.api_keys


@pytest.mark.parametrize("data, reason", [
    (struct.pack(">i", -1), "bad frame"),
    (struct.pack(">i", 4) + b"\0\0\0\0", "bad request header"),
    (struct.pack(">ihhi", 8, 999, 0, 1), "unknown api key 999"),
    (struct.pack(">ihhi", 8, 3, 99, 1), "unsupported version 99 of Metadata"),
    (struct.pack(">ihhi", 8, 3, 1, 1), "cannot decode Metadata v1"),
])
def test_a_malformed_request_closes_that_connection(broker, caplog, data, reason):
    c = connect(broker)
    feed(c, data)
    assert c.state is CLOSED and not c.reading
    assert reason in caplog.text


def test_a_failing_handler_closes_the_connection(broker, caplog):
    def failing(_broker, _ctx, _req):
        raise RuntimeError("boom")
    broker.handlers = {**broker.handlers, METADATA.key: failing}
    c = connect(broker)
    feed(c, metadata(1))
    assert c.state is CLOSED and "Metadata handler failed" in caplog.text


def test_an_answer_that_waits_keeps_the_order_and_wakes_the_transport(broker):
    async def run():
        later = asyncio.get_running_loop().create_future()

        async def waits(_broker, _ctx, _req):
            return await later
        woken = []
        broker.handlers = {**broker.handlers, PRODUCE.key: waits}
        c = connect(broker, wake=lambda: woken.append(c.take_output()))
        feed(c, request(PRODUCE, 9, 1, acks=1, timeout_ms=1000, transactional_id=None,
                        topic_data=[]) + metadata(2))
        assert c.take_output() is None  # the Metadata answer waits behind the Produce one
        assert len(c.pending) == 2 and len(c.tasks) == 1
        later.set_result(PRODUCE.Response(responses=[]))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert len(woken) == 1 and not c.pending
        out = b"".join(bytes(x) for x in woken[0])
        assert struct.unpack_from(">i", out, 4)[0] == 1  # Produce's answer first
        c.connection_lost()
        assert c.state is CLOSED
    asyncio.run(run())


def test_reading_stops_while_too_many_requests_are_in_flight(broker):
    async def run():
        async def waits(_broker, _ctx, _req):
            await asyncio.sleep(60)
        broker.handlers = {**broker.handlers, METADATA.key: waits}
        c = connect(broker)
        feed(c, b"".join(metadata(i) for i in range(core.MAX_IN_FLIGHT)))
        assert c.reading
        feed(c, metadata(core.MAX_IN_FLIGHT))
        assert not c.reading and c.state is READY
        tasks = list(c.tasks)
        c.connection_lost()  # the peer gone: what is still being answered is cancelled
        await asyncio.sleep(0)
        assert all(t.cancelled() for t in tasks) and not c.pending
    asyncio.run(run())


# -- AUTHENTICATING -------------------------------------------------------------------------------
def test_before_sasl_authentication_only_sasl_requests_are_served(broker, caplog):
    c = connect(broker, "SASL_PLAINTEXT")
    feed(c, request(API_VERSIONS, 0, 1))
    assert answer(frames(c)[0], API_VERSIONS, 0)[1].error_code == 0
    assert c.state is AUTHENTICATING
    feed(c, metadata(2))
    assert c.state is CLOSED
    assert "unexpected request (api key 3) before SASL authentication" in caplog.text


def test_sasl_handshake_and_authenticate_make_the_connection_ready(broker):
    clock = Clock()
    c = connect(broker, "SASL_PLAINTEXT", clock)
    feed(c, handshake(1) + authenticate(2) + metadata(3))  # pipelined: served in turn
    hs, auth, md = frames(c)
    assert answer(hs, SASL_HANDSHAKE, 1)[1].mechanisms == ["PLAIN"]
    resp = answer(auth, SASL_AUTHENTICATE, 2)[1]
    assert resp.error_code == 0 and resp.session_lifetime_ms == 60000
    assert answer(md, METADATA, 1)[0] == 3
    assert c.state is READY and c.security.principal == "User:alice"
    assert c.security.expires_at == clock.now + 60


def test_an_unsupported_mechanism_is_answered_then_the_connection_closes(broker):
    c = connect(broker, "SASL_PLAINTEXT")
    feed(c, handshake(1, "GSSAPI") + request(API_VERSIONS, 0, 2))
    (hs,) = frames(c)  # nothing after the refused handshake is read
    resp = answer(hs, SASL_HANDSHAKE, 1)[1]
    assert resp.error_code == errors.UNSUPPORTED_SASL_MECHANISM and resp.mechanisms == ["PLAIN"]
    assert c.state is CLOSING and not c.reading and c.close_delay == 0
    c.written()
    assert c.state is CLOSED


def test_a_failed_authentication_closes_after_the_delay(broker):
    c = connect(broker, "SASL_PLAINTEXT")
    feed(c, handshake(1) + authenticate(2, b"\0alice\0wrong"))
    resp = answer(frames(c)[1], SASL_AUTHENTICATE, 2)[1]
    assert resp.error_code == errors.SASL_AUTHENTICATION_FAILED
    assert resp.error_message == "Authentication failed: Invalid username or password"
    assert c.state is CLOSING and c.close_delay == 0.3 and not c.reading


def test_sasl_authenticate_without_handshake_is_an_illegal_state(broker):
    c = connect(broker, "SASL_PLAINTEXT")
    feed(c, authenticate(1))
    assert answer(frames(c)[0], SASL_AUTHENTICATE, 2)[1].error_code == errors.ILLEGAL_SASL_STATE
    assert c.state is AUTHENTICATING


# -- SASL_TOKENS ----------------------------------------------------------------------------------
def test_after_handshake_v0_frames_are_bare_tokens(broker):
    c = connect(broker, "SASL_PLAINTEXT")
    feed(c, handshake(1, version=0))
    assert answer(frames(c)[0], SASL_HANDSHAKE, 0)[1].error_code == 0
    assert c.state is SASL_TOKENS and c.reading
    feed(c, struct.pack(">i", len(ALICE)) + ALICE + metadata(2))
    token, md = frames(c)
    assert token == b""  # an empty bare frame: success
    assert answer(md, METADATA, 1)[0] == 2
    assert c.state is READY and c.security.principal == "User:alice"


def test_a_wrong_bare_token_gets_no_answer_and_the_connection_closes(broker):
    c = connect(broker, "SASL_PLAINTEXT")
    feed(c, handshake(1, version=0))
    frames(c)
    feed(c, struct.pack(">i", 12) + b"\0alice\0wrong")
    assert frames(c) == [] and c.state is CLOSING and c.close_delay == 0.3


# -- READY with a SASL session (KIP-368) ----------------------------------------------------------
def test_an_expired_session_serves_only_a_reauthentication(broker, caplog):
    clock = Clock()
    c = connect(broker, "SASL_PLAINTEXT", clock)
    feed(c, handshake(1) + authenticate(2))
    frames(c)
    clock.now += 61
    feed(c, handshake(3) + authenticate(4))  # re-authentication, as the same principal
    hs, auth = frames(c)
    assert answer(auth, SASL_AUTHENTICATE, 2)[1].error_code == 0
    assert c.state is READY and c.security.expires_at == clock.now + 60
    clock.now += 61
    feed(c, metadata(5))
    assert c.state is CLOSED and "SASL session expired without re-authentication" in caplog.text


# -- THROTTLED ------------------------------------------------------------------------------------
def test_a_request_over_its_quota_mutes_the_client_for_the_throttle_time(broker):
    clock = Clock()
    broker.quotas.quotas = {((CLIENT, "test"),): {REQUEST: 1e-6}}
    c = connect(broker, clock=clock)
    feed(c, metadata(1) + metadata(2))  # the second was read already: it is served too
    first, second = (answer(f, METADATA, 1)[1] for f in frames(c))
    assert c.state is THROTTLED and not c.reading
    until = c.muted_until
    assert until > clock.now
    c.unmute(until - 1)  # a timer armed for an earlier throttle
    assert c.state is THROTTLED
    c.unmute(until)
    assert c.state is READY and c.reading and c.muted_until == 0


def test_a_handler_returns_its_throttle_even_without_a_response(broker):
    def acks0(_broker, _ctx, _req):
        return Reply(NO_RESPONSE, Throttle(500))
    broker.handlers = {**broker.handlers, METADATA.key: acks0}
    clock = Clock()
    c = connect(broker, clock=clock)
    feed(c, metadata(1))
    assert not c.take_output() and c.state is THROTTLED
    assert c.muted_until == clock.now + 0.5


def test_a_throttle_before_authentication_closes_the_connection(broker, caplog):
    c = connect(broker, "SASL_PLAINTEXT")
    c._event(Throttle(10))
    assert c.state is CLOSED and "Throttle not allowed in state AUTHENTICATING" in caplog.text
