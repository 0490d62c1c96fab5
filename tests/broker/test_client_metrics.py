"""Client metrics (KIP-714, broker/client_metrics.py): subscriptions as Kafka validates and
matches them, the push rules of Kafka's ClientMetricsManager, and OTLP payloads kept for
Prometheus."""
from __future__ import annotations

import uuid

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as otlp

from josefk.broker.client_metrics import (ClientMetricsManager, InvalidSubscription,
                                          Subscription, prometheus_name)
from josefk.wire import errors
from josefk.wire.records import ZSTD, compress

CLIENT = {"client_id": "billing", "client_software_name": "librdkafka",
          "client_software_version": "2.16.0", "client_source_address": "127.0.0.1",
          "client_source_port": "50000"}


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self):
        return self.ms


def payload(value=5.0, delta=False, name="org.apache.kafka.producer.record.queue.time.avg"):
    data = otlp.MetricsData()
    m = data.resource_metrics.add().scope_metrics.add().metrics.add()
    m.name = name
    m.description = "queue time"
    if delta:
        m.sum.aggregation_temporality = otlp.AGGREGATION_TEMPORALITY_DELTA
        m.sum.is_monotonic = True
        p = m.sum.data_points.add()
    else:
        p = m.gauge.data_points.add()
    p.as_double = value
    p.attributes.append(KeyValue(key="node.id", value=AnyValue(string_value="1")))
    return data.SerializeToString()


@pytest.mark.parametrize("configs, code", [
    ({"metrics": "a.,b", "interval.ms": "99"}, errors.INVALID_REQUEST),
    ({"interval.ms": "3600001"}, errors.INVALID_REQUEST),
    ({"interval.ms": "soon"}, errors.INVALID_CONFIG),
    ({"colour": "red"}, errors.INVALID_REQUEST),
    ({"match": "client_colour=red"}, errors.INVALID_CONFIG),
    ({"match": "client_id=a=b"}, errors.INVALID_CONFIG),
    ({"match": "client_id=(unclosed"}, errors.INVALID_CONFIG),
])
def test_subscriptions_are_validated_as_kafka_does(configs, code):
    with pytest.raises(InvalidSubscription) as e:
        Subscription("sub", configs)
    assert e.value.code == code
    with pytest.raises(InvalidSubscription):
        Subscription("", {"metrics": "*"})


def test_matching_subscriptions_are_combined():
    m = ClientMetricsManager(1 << 20, Clock())
    m.update("all-librdkafka", {"metrics": "org.apache.kafka.producer.", "interval.ms": "5000",
                                "match": "client_software_name=librdkafka,client_id=bill.*"})
    m.update("java-only", {"metrics": "*", "match": "client_software_name=apache-kafka-java"})
    m.update("fast", {"metrics": "org.apache.kafka.consumer.", "interval.ms": "1000"})
    code, inst = m.get_subscriptions(None, CLIENT)
    assert code == errors.NONE and inst.id.int != 0
    assert inst.requested_metrics() == ["org.apache.kafka.consumer.",
                                        "org.apache.kafka.producer."]
    assert inst.interval_ms == 1000
    m.update("java-only", {"metrics": "*"})  # now matching every client: all metrics
    code, again = m.get_subscriptions(inst.id, CLIENT)
    assert code == errors.NONE and again.requested_metrics() == [""]
    assert again.subscription_id != inst.subscription_id


def test_no_subscription_asks_for_nothing():
    code, inst = ClientMetricsManager(1 << 20, Clock()).get_subscriptions(None, CLIENT)
    assert code == errors.NONE and inst.requested_metrics() == [] and inst.interval_ms == 300000


def test_push_rules():
    clock = Clock()
    m = ClientMetricsManager(1 << 20, clock)
    m.update("all", {"metrics": "*", "interval.ms": "1000"})
    _code, inst = m.get_subscriptions(None, CLIENT)
    sid = inst.subscription_id
    # the first push after a subscription is taken at once
    assert m.push(inst.id, CLIENT, sid, False, ZSTD, compress(ZSTD, payload())) == errors.NONE
    clock.ms += 400  # before the interval: throttled
    assert m.push(inst.id, CLIENT, sid, False, 0, payload()) == \
        errors.THROTTLING_QUOTA_EXCEEDED
    clock.ms += 1000
    assert m.push(inst.id, CLIENT, sid + 1, False, 0, payload()) == errors.UNKNOWN_SUBSCRIPTION_ID
    clock.ms += 1000
    assert m.push(inst.id, CLIENT, sid, False, 7, payload()) == \
        errors.UNSUPPORTED_COMPRESSION_TYPE
    clock.ms += 1000
    assert m.push(inst.id, CLIENT, sid, False, 0, b"\xff\xff") == errors.INVALID_RECORD
    clock.ms += 1000
    assert m.push(inst.id, CLIENT, sid, True, 0, payload(7.0)) == errors.NONE  # terminating
    assert m.push(inst.id, CLIENT, sid, False, 0, payload()) == errors.INVALID_REQUEST
    assert m.push(uuid.UUID(int=0), CLIENT, sid, False, 0, payload()) == errors.INVALID_REQUEST
    small = ClientMetricsManager(10, clock)
    small.update("all", {"metrics": "*"})
    _code, inst = small.get_subscriptions(None, CLIENT)
    assert small.push(inst.id, CLIENT, inst.subscription_id, False, 0, payload()) == \
        errors.TELEMETRY_TOO_LARGE


def test_pushed_values_become_prometheus_series():
    clock = Clock()
    m = ClientMetricsManager(1 << 20, clock)
    m.update("all", {"metrics": "*", "interval.ms": "100"})
    _code, inst = m.get_subscriptions(None, CLIENT)
    counter = "org.apache.kafka.producer.connection.creation.total"
    for value in (3, 4):  # a client that sends deltas anyway: they add up
        clock.ms += 200
        assert m.push(inst.id, CLIENT, inst.subscription_id, False, 0,
                      payload(value, delta=True, name=counter)) == errors.NONE
    clock.ms += 200
    m.push(inst.id, CLIENT, inst.subscription_id, False, 0, payload(2.5))
    fams = {name: (kind, series) for name, kind, _help, series in m.families()}
    kind, ((labels, value),) = fams[prometheus_name(counter)]
    assert kind == "counter" and value == 7
    assert labels["client_id"] == "billing" and labels["node_id"] == "1"
    assert labels["client_instance_id"] == str(inst.id)
    kind, ((_labels, value),) = fams["org_apache_kafka_producer_record_queue_time_avg"]
    assert kind == "gauge" and value == 2.5
