"""What the mirror scenarios share: a flow's connector settings between two brokers, reading
a topic to its end, waiting for a condition."""
import time

from confluent_kafka import Consumer, TopicPartition


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
