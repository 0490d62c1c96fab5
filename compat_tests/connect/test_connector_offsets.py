"""KIP-618's per-connector offsets topics on two distributed ``josefk connect`` workers with
exactly-once sources: two generator connectors with offsets topics of their own run at once,
the worker running one of them is killed with SIGKILL, its task resumes on the survivor from
the connector's own topic (every record once to a read_committed consumer); the offsets are in
the connector's topic (made with the worker's partitions and replication factor) and copied
to the worker's; KIP-875's GET/PATCH/DELETE offsets read and write the connector's topic. A
PATCH of a stopped exactly-once source fences its tasks' zombie producers and writes in a
transaction; the resumed task starts from the patched offset. On one broker and on the
``spread`` cluster."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from compat_tests.connect.test_workers import read_topic, running
from compat_tests.connect.workers import Workers, call
from compat_tests.helpers import consumer
from compat_tests.http_services import wait_until
from josefk.faults.checker import positions

GENERATOR = "josefk.connect.connectors.generator.GeneratorSourceConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"


def offsets_topic(bootstrap: str, topic: str, timeout: float = 10) -> dict:
    """The latest committed value of each key of an offsets topic ({key: value or None})."""
    c = consumer(bootstrap, isolation_level="read_committed")
    try:
        partitions = c.list_topics(topic, timeout=timeout).topics[topic].partitions
        ends = {}
        for p in partitions:
            ends[p] = c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        latest, deadline = {}, time.monotonic() + timeout
        while time.monotonic() < deadline:
            positions_now = {tp.partition: tp.offset for tp in c.position(
                [TopicPartition(topic, p) for p in partitions])}
            if all(positions_now[p] >= end for p, end in ends.items()):
                break
            for m in c.consume(500, 0.2):
                if not m.error():
                    latest[m.key().decode()] = m.value() and json.loads(m.value())
        return latest
    finally:
        c.close()


@pytest.mark.parametrize("target", ["single", "spread"], indirect=True)
def test_a_connectors_own_offsets_topic_survives_a_killed_worker_and_serves_the_endpoints(
        target, tmp_path, topic_name):
    total = 6000
    rf = 1 if target.name == "single" else 3
    workers = Workers(target.bootstrap, tmp_path, 2, replication_factor=rf, **{
        "exactly.once.source.support": "enabled", "key.converter": STRING,
        "value.converter": STRING})
    group, url = workers.group, workers.urls[0]
    names = ("gen-a", "gen-b")
    topics = {n: target.create_topic(f"{topic_name}-{n}") for n in names}
    own = {n: f"{group}-{n}-offsets" for n in names}
    try:
        for n in names:
            assert call("POST", f"{url}/connectors", json={"name": n, "config": {
                "connector.class": GENERATOR, "topic": topics[n], "max.messages": str(total),
                "throughput": "800", "key": "string", "message.size": "20", "tasks.max": "1",
                "exactly.once.support": "required", "transaction.boundary": "interval",
                "transaction.boundary.interval.ms": "300",
                "offsets.storage.topic": own[n]}}).status_code == 201
        (owner,) = wait_until(lambda: running(url, "gen-a"), timeout=60)
        wait_until(lambda: running(url, "gen-b"), timeout=60)
        made = target.admin().list_topics(own["gen-a"], timeout=10).topics[own["gen-a"]]
        assert len(made.partitions) == 5  # the worker's offset.storage.partitions
        assert {len(p.replicas) for p in made.partitions.values()} == {rf}
        key = '["gen-a",{"task":0}]'
        wait_until(lambda: (offsets_topic(target.bootstrap, own["gen-a"]).get(key) or
                            {"seq": 0})["seq"] > 500, timeout=60)
        victim = workers.by_id(owner)
        victim.kill()
        survivor = next(w for w in workers.processes if w is not victim).url
        moved = wait_until(lambda: (w := running(survivor, "gen-a")) and w != [owner] and w,
                           timeout=60)
        assert moved != [owner]
        for n in names:
            records = read_topic(target.bootstrap, topics[n], total, timeout=90,
                                 isolation_level="read_committed")
            places = positions({(topics[n], 0): [(o, k.decode()) for o, k, _v in records]})
            doubled = {k: p for k, p in places.items() if len(p) > 1}
            assert not doubled, f"{n}: records written twice: {list(doubled.items())[:5]}"
            assert set(places) == {str(i) for i in range(total)}
            wanted = {f'["{n}",{{"task":0}}]': {"seq": total - 1}}
            wait_until(lambda: offsets_topic(target.bootstrap, own[n]) == wanted, timeout=30)
            # the secondary copy in the worker's offsets topic
            wait_until(lambda: offsets_topic(target.bootstrap, f"{group}-offsets").get(
                f'["{n}",{{"task":0}}]') == {"seq": total - 1}, timeout=30)

        # KIP-875 on the connector's own topic
        assert call("PUT", f"{survivor}/connectors/gen-a/stop").status_code == 204
        wait_until(lambda: call("GET", f"{survivor}/connectors/gen-a/status").json()
                   ["connector"]["state"] == "STOPPED", timeout=60)
        got = call("GET", f"{survivor}/connectors/gen-a/offsets").json()
        assert got == {"offsets": [{"partition": {"task": 0}, "offset": {"seq": total - 1}}]}
        altered = wait_until(lambda: (r := call("PATCH", f"{survivor}/connectors/gen-a/offsets",
                                                json={"offsets": [{"partition": {"task": 0},
                                                                   "offset": {"seq": 99}}]}))
                             .status_code == 200 and r, timeout=60)
        assert altered.json() == {"message": "The offsets for this connector have been "
                                             "altered successfully"}
        assert offsets_topic(target.bootstrap, own["gen-a"]) == {key: {"seq": 99}}
        assert call("GET", f"{survivor}/connectors/gen-a/offsets").json() == {
            "offsets": [{"partition": {"task": 0}, "offset": {"seq": 99}}]}
        assert call("DELETE", f"{survivor}/connectors/gen-a/offsets").status_code == 200
        assert offsets_topic(target.bootstrap, own["gen-a"]) == {key: None}
        assert offsets_topic(target.bootstrap, f"{group}-offsets")[key] is None
        assert call("GET", f"{survivor}/connectors/gen-a/offsets").json() == {"offsets": []}
    finally:
        workers.stop()


@pytest.mark.parametrize("target", ["single", "spread"], indirect=True)
def test_a_patch_of_a_stopped_exactly_once_source_fences_its_zombies_and_is_resumed_from(
        target, tmp_path, topic_name):
    share = 400  # per task: sequence numbers 0..399
    rf = 1 if target.name == "single" else 3
    workers = Workers(target.bootstrap, tmp_path, 2, replication_factor=rf, **{
        "exactly.once.source.support": "enabled", "key.converter": STRING,
        "value.converter": STRING})
    group, url = workers.group, workers.urls[0]
    topic = target.create_topic(topic_name)
    worker_topic = f"{group}-offsets"
    keys = [f'["gen",{{"task":{t}}}]' for t in (0, 1)]
    try:
        assert call("POST", f"{url}/connectors", json={"name": "gen", "config": {
            "connector.class": GENERATOR, "topic": topic, "max.messages": str(2 * share),
            "throughput": "400", "key": "string", "message.size": "20", "tasks.max": "2",
            "exactly.once.support": "required"}}).status_code == 201
        wait_until(lambda: running(url, "gen", tasks=2), timeout=60)
        wait_until(lambda: [offsets_topic(target.bootstrap, worker_topic).get(k) for k in keys]
                   == [{"seq": share - 1}] * 2, timeout=60)
        assert len(read_topic(target.bootstrap, topic, 2 * share,
                              isolation_level="read_committed")) == 2 * share

        assert call("PUT", f"{url}/connectors/gen/stop").status_code == 204
        wait_until(lambda: call("GET", f"{url}/connectors/gen/status").json()
                   ["connector"]["state"] == "STOPPED", timeout=60)
        zombie = Producer({"bootstrap.servers": target.bootstrap,
                           "transactional.id": f"{group}-gen-1"})
        zombie.init_transactions(30)
        zombie.begin_transaction()
        zombie.produce(topic, key=b"zombie", value=b"zombie")
        zombie.flush(30)

        altered = wait_until(lambda: (r := call("PATCH", f"{url}/connectors/gen/offsets",
                                                json={"offsets": [{"partition": {"task": 0},
                                                                   "offset": {"seq": 299}}]}))
                             .status_code == 200 and r, timeout=60)
        assert altered.json() == {"message": "The offsets for this connector have been "
                                             "altered successfully"}
        with pytest.raises(KafkaException) as e:
            zombie.commit_transaction(30)
        assert e.value.args[0].code() == KafkaError._FENCED
        assert [offsets_topic(target.bootstrap, worker_topic)[k] for k in keys] == [
            {"seq": 299}, {"seq": share - 1}]

        assert call("PUT", f"{url}/connectors/gen/resume").status_code == 202
        records = read_topic(target.bootstrap, topic, 2 * share + 100,
                             isolation_level="read_committed")
        assert [k.decode() for _o, k, _v in records[2 * share:]] == [
            str(s) for s in range(300, share)]
        wait_until(lambda: sorted(
            (o["partition"]["task"], o["offset"]["seq"])
            for o in call("GET", f"{url}/connectors/gen/offsets").json()["offsets"])
            == [(0, share - 1), (1, share - 1)], timeout=60)
    finally:
        workers.stop()
