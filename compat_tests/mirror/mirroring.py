"""What the mirror scenarios share: a flow's connector settings between two brokers, reading
a topic to its end, waiting for a condition, ``josefk mirror``'s dedicated mode running."""
import asyncio
import contextlib
import threading
import time

from confluent_kafka import Consumer, TopicPartition

from josefk.connect.runtime.worker_config import WorkerConfig
from josefk.mirror.main import serve
from josefk.mirror.maker import read_flows


def flow(primary, backup, **more):
    return {"source.cluster.alias": "primary", "target.cluster.alias": "backup",
            "source.cluster.bootstrap.servers": primary.bootstrap_servers,
            "target.cluster.bootstrap.servers": backup.bootstrap_servers,
            "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
            "checkpoints.topic.replication.factor": "1",
            "heartbeats.topic.replication.factor": "1", **more}


def read_all(bootstrap, topic, partitions, timeout=15, isolation="read_uncommitted"):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    out, done, deadline = [], set(), time.monotonic() + timeout
    while len(done) < partitions and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            done.add(msg.partition())
            continue
        out.append(msg)
    consumer.close()
    return out


def until(check, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError("timed out")


@contextlib.contextmanager
def dedicated_mode(primary, backup, **more):
    """``josefk mirror`` running the flows of an mm2.properties between the brokers
    ``primary`` and ``backup`` (primary->backup enabled, topic "orders", one replica and
    partition for every internal topic; ``more`` on top) in a thread; yields the herders,
    one per flow, once they exist."""
    props = {"clusters": "primary, backup",
             "primary.bootstrap.servers": primary.bootstrap_servers,
             "backup.bootstrap.servers": backup.bootstrap_servers,
             "primary->backup.enabled": "true", "primary->backup.topics": "orders",
             "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
             "checkpoints.topic.replication.factor": "1",
             "heartbeats.topic.replication.factor": "1",
             "config.storage.replication.factor": "1",
             "offset.storage.replication.factor": "1",
             "status.storage.replication.factor": "1",
             "offset.storage.partitions": "1", "status.storage.partitions": "1",
             "offset.flush.interval.ms": "500", **more}
    flows = read_flows(props)
    workers = [WorkerConfig({"listeners": "http://127.0.0.1:0", **f.worker}, distributed=True)
               for f in flows]
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    herders = []
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(
        flows, workers, stop, herders.extend),), daemon=True)
    thread.start()
    try:
        until(lambda: herders, timeout=60)
        yield herders
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
