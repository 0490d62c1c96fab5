"""Faults for tests (broker/injection.py): handlers are wrapped only while a fault is set, the
injected error answers without handling the request, and the control endpoint's lines."""
from __future__ import annotations

import asyncio
import json

import pytest

from josefk.broker.handlers import NO_RESPONSE
from josefk.broker.injection import FaultError, FaultInjector
from josefk.wire import errors
from josefk.wire.apis import FETCH, METADATA, PRODUCE


class _Ctx:
    def __init__(self, api):
        self.api = api


class _Broker:
    def __init__(self):
        self.handled = []
        handle = self._handle
        self.handlers = {PRODUCE.key: handle, FETCH.key: handle, METADATA.key: handle}

    def _handle(self, broker, ctx, req):
        self.handled.append(req)
        return "handled"


def _produce(acks=-1):
    R = PRODUCE.Request
    return R(acks=acks, timeout_ms=1000, topic_data=[R.TopicProduceData(
        name="t", partition_data=[R.PartitionProduceData(index=0, records=b"")])])


def test_the_next_requests_fail_and_then_the_handler_itself_is_back():
    broker = _Broker()
    original = broker.handlers[PRODUCE.key]
    faults = FaultInjector(broker.handlers)
    faults.inject("produce", "NOT_LEADER_OR_FOLLOWER", 2)
    assert broker.handlers[PRODUCE.key] is not original
    assert broker.handlers[FETCH.key] is broker.handlers[METADATA.key]  # others untouched
    for _ in range(2):
        resp = broker.handlers[PRODUCE.key](broker, _Ctx(PRODUCE), _produce())
        assert resp.responses[0].partition_responses[0].error_code == \
            errors.NOT_LEADER_OR_FOLLOWER
    assert broker.handled == []  # nothing was appended
    assert broker.handlers[PRODUCE.key] is original
    assert faults.pending() == {"errors": {}, "delays": {}}


def test_a_failed_produce_with_acks_0_gets_no_answer():
    broker = _Broker()
    faults = FaultInjector(broker.handlers)
    faults.inject(PRODUCE.key, errors.NOT_ENOUGH_REPLICAS)
    assert broker.handlers[PRODUCE.key](broker, _Ctx(PRODUCE), _produce(acks=0)) is NO_RESPONSE


def test_a_delay_holds_the_answer_back_until_it_is_ended():
    broker = _Broker()
    original = broker.handlers[FETCH.key]
    faults = FaultInjector(broker.handlers)
    faults.delay("Fetch", 50)

    async def answer():
        loop = asyncio.get_running_loop()
        start = loop.time()
        result = await broker.handlers[FETCH.key](broker, _Ctx(FETCH), "req")
        return result, loop.time() - start

    result, waited = asyncio.run(answer())
    assert result == "handled" and waited >= 0.045
    faults.delay("Fetch", 0)
    assert broker.handlers[FETCH.key] is original


def test_clear_puts_every_handler_back():
    broker = _Broker()
    before = dict(broker.handlers)
    faults = FaultInjector(broker.handlers)
    faults.inject("Metadata", 5, 10)
    faults.delay("Produce", 10)
    faults.clear()
    assert broker.handlers == before and all(broker.handlers[k] is h for k, h in before.items())


@pytest.mark.parametrize("api,error,count,message", [
    ("NoSuchApi", 6, 1, "serves no API"),
    ("Heartbeat", 6, 1, "serves no API"),  # declared, but not served by this broker
    ("Produce", "NO_SUCH_ERROR", 1, "not a Kafka error"),
    ("Produce", 0, 1, "not a Kafka error"),
    ("Produce", 6, 0, "count must be a positive integer"),
])
def test_faults_that_cannot_be_set_are_refused(api, error, count, message):
    with pytest.raises(FaultError, match=message):
        FaultInjector(_Broker().handlers).inject(api, error, count)


def test_control_lines():
    faults = FaultInjector(_Broker().handlers)
    answer = faults.command(json.dumps({"op": "inject", "api": "Produce",
                                        "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}).encode())
    assert answer == {"ok": True, "faults": {
        "errors": {"Produce": ["NOT_LEADER_OR_FOLLOWER", 3]}, "delays": {}}}
    assert faults.command(b'{"op": "delay", "api": 1, "ms": 20}')["faults"]["delays"] == \
        {"Fetch": 20}
    assert faults.command(b'{"op": "clear"}')["faults"] == {"errors": {}, "delays": {}}
    assert "unknown op" in faults.command(b'{"op": "explode"}')["error"]
    assert "error" in faults.command(b"not json")
    assert "error" in faults.command(b"\xff\xfe")
