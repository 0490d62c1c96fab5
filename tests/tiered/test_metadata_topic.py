"""``__remote_log_metadata`` through Kafka clients of a real broker: made on first use with
Kafka's settings, events land in their user partition's metadata partition and read back in
order."""
import uuid

from confluent_kafka.admin import AdminClient, ConfigResource

from josefk.testing import broker
from josefk.tiered import metadata as md
from josefk.tiered.metadata_topic import TopicMetadataLog


def test_events_go_to_their_metadata_partition_and_read_back():
    with broker() as b:
        mlog = TopicMetadataLog(b.bootstrap_servers, partitions=5, replication=3)
        a, other = (uuid.uuid4(), 0), (uuid.uuid4(), 1)
        for i in range(3):
            mlog.append(*a, b"a%d" % i)
        mlog.append(*other, b"other")
        got = mlog.read(*a)
        same = md.metadata_partition(*a, 5) == md.metadata_partition(*other, 5)
        assert got == [b"a0", b"a1", b"a2"] + ([b"other"] if same else [])
        used = {md.metadata_partition(*a, 5), md.metadata_partition(*other, 5)}
        empty = next(uuid.UUID(int=k) for k in range(100)
                     if md.metadata_partition(uuid.UUID(int=k), 0, 5) not in used)
        assert TopicMetadataLog(b.bootstrap_servers, partitions=5).read(empty, 0) == []
        mlog.close()

        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        meta = admin.list_topics(md.TOPIC, timeout=10).topics[md.TOPIC]
        assert len(meta.partitions) == 5
        assert len(meta.partitions[0].replicas) == 1  # at most the brokers there are
        resource = ConfigResource(ConfigResource.Type.TOPIC, md.TOPIC)
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["retention.ms"].value == "-1"
        assert configs["cleanup.policy"].value == "delete"
