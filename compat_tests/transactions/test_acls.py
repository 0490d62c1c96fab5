"""ACLs on the transactional APIs, with SASL PLAIN users on a broker running the ACL
authorizer: Write on the TransactionalId (and on the topics, Read on the group) for the producer's
requests, Describe on it for DescribeTransactions / ListTransactions, Read on the topic for
DescribeProducers. Kafka's error codes, seen by a raw client and by confluent-kafka's
transactional producer."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException, Producer

from josefk.tools.client import Client
from compat_tests.helpers import unique_topic
from compat_tests.security_setup import josefk
from compat_tests.security.test_acls import acl_broker, admin_props, create_topics, sasl  # noqa: F401
from josefk.wire import errors
from josefk.wire.apis import (ADD_OFFSETS_TO_TXN, ADD_PARTITIONS_TO_TXN, DESCRIBE_PRODUCERS,
                              DESCRIBE_TRANSACTIONS, END_TXN, FIND_COORDINATOR, INIT_PRODUCER_ID,
                              LIST_TRANSACTIONS, TXN_OFFSET_COMMIT)


def _allow(broker, tmp_path, user, op, **resource):
    flags = [a for kind, name in resource.items()
             for a in (f"--{kind.replace('_', '-')}", name)]
    josefk("acls", *admin_props(tmp_path, broker), "--add", "--allow-principal", f"User:{user}",
           "--operation", op, *flags)


def _client(broker, user):
    return Client(sasl(broker, user)["bootstrap.servers"], props=sasl(broker, user))


def _init(c, tid):
    c.request(FIND_COORDINATOR, key=tid, coordinator_keys=[tid], key_type=1)
    r = c.request(INIT_PRODUCER_ID, transactional_id=tid, transaction_timeout_ms=60000)
    return r.error_code, r.producer_id, r.producer_epoch


def _add_partitions(c, tid, pid, epoch, *topics):
    R = ADD_PARTITIONS_TO_TXN.Request
    resp = c._call(ADD_PARTITIONS_TO_TXN, 3, R(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[R.AddPartitionsToTxnTopic(name=t, partitions=[0]) for t in topics]))
    return {t.name: t.results_by_partition[0].partition_error_code
            for t in resp.results_by_topic_v3_and_below}


def _txn_offset_commit(c, tid, pid, epoch, group, topic):
    R = TXN_OFFSET_COMMIT.Request
    resp = c.request(TXN_OFFSET_COMMIT, transactional_id=tid, group_id=group, producer_id=pid,
                     producer_epoch=epoch, topics=[R.TxnOffsetCommitRequestTopic(
                         name=topic, partitions=[R.TxnOffsetCommitRequestTopic
                                                 .TxnOffsetCommitRequestPartition(
                                                     partition_index=0, committed_offset=1)])])
    return resp.topics[0].partitions[0].error_code


def test_transactional_requests_need_write_on_the_id_the_topics_and_read_on_the_group(
        acl_broker, tmp_path):  # noqa: F811
    mine, other = unique_topic("txacl"), unique_topic("txacl-other")
    tid, foreign = "acl-" + uuid.uuid4().hex[:6], "acl-foreign-" + uuid.uuid4().hex[:6]
    group, other_group = f"g-{mine}", f"g-other-{mine}"
    create_topics(acl_broker, mine, other)
    _allow(acl_broker, tmp_path, "alice", "Write", transactional_id=tid, topic=mine)
    _allow(acl_broker, tmp_path, "alice", "Read", topic=mine, group=group)
    with _client(acl_broker, "admin") as admin:
        code, fpid, fepoch = _init(admin, foreign)  # an id alice may not use
        assert code == errors.NONE
    with _client(acl_broker, "alice") as c:
        assert _init(c, foreign)[0] == errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        code, pid, epoch = _init(c, tid)
        assert code == errors.NONE
        # Write on the id, not on the topic: the request fails, the allowed one not attempted
        assert _add_partitions(c, tid, pid, epoch, mine, other) == {
            mine: errors.OPERATION_NOT_ATTEMPTED, other: errors.TOPIC_AUTHORIZATION_FAILED}
        assert _add_partitions(c, tid, pid, epoch, "__consumer_offsets") == {
            "__consumer_offsets": errors.TOPIC_AUTHORIZATION_FAILED}
        assert _add_partitions(c, foreign, fpid, fepoch, mine) == {
            mine: errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        assert _add_partitions(c, tid, pid, epoch, mine) == {mine: errors.NONE}
        R = ADD_OFFSETS_TO_TXN
        assert c.request(R, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=other_group).error_code == errors.GROUP_AUTHORIZATION_FAILED
        assert c.request(R, transactional_id=foreign, producer_id=fpid, producer_epoch=fepoch,
                         group_id=group).error_code == \
            errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert c.request(R, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=group).error_code == errors.NONE
        assert _txn_offset_commit(c, foreign, fpid, fepoch, group, mine) == \
            errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert _txn_offset_commit(c, tid, pid, epoch, other_group, mine) == \
            errors.GROUP_AUTHORIZATION_FAILED
        assert _txn_offset_commit(c, tid, pid, epoch, group, other) == \
            errors.TOPIC_AUTHORIZATION_FAILED
        assert _txn_offset_commit(c, tid, pid, epoch, group, mine) == errors.NONE
        assert c.request(END_TXN, transactional_id=foreign, producer_id=fpid,
                         producer_epoch=fepoch, committed=True).error_code == \
            errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert c.request(END_TXN, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         committed=True).error_code == errors.NONE


def test_admin_apis_list_and_describe_only_what_the_user_may_describe(
        acl_broker, tmp_path):  # noqa: F811
    topic, hidden = unique_topic("txadm"), unique_topic("txadm-hidden")
    seen, unseen = "adm-seen-" + uuid.uuid4().hex[:6], "adm-unseen-" + uuid.uuid4().hex[:6]
    create_topics(acl_broker, topic, hidden)
    with _client(acl_broker, "admin") as admin:
        for tid in (seen, unseen):
            code, pid, epoch = _init(admin, tid)
            assert code == errors.NONE
            assert _add_partitions(admin, tid, pid, epoch, topic, hidden) == {
                topic: errors.NONE, hidden: errors.NONE}
    _allow(acl_broker, tmp_path, "carol", "Describe", transactional_id=seen)
    _allow(acl_broker, tmp_path, "carol", "Describe", topic=topic)
    _allow(acl_broker, tmp_path, "carol", "Read", topic=topic)
    with _client(acl_broker, "carol") as c:
        listed = {t.transactional_id for t in c.request(LIST_TRANSACTIONS).transaction_states}
        assert seen in listed and unseen not in listed
        states = {s.transactional_id: s for s in c.request(
            DESCRIBE_TRANSACTIONS, transactional_ids=[seen, unseen]).transaction_states}
        assert states[unseen].error_code == errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert states[seen].error_code == errors.NONE
        assert states[seen].transaction_state == "Ongoing"
        # only the partitions of topics carol may describe
        assert [(t.topic, t.partitions) for t in states[seen].topics] == [(topic, [0])]
        R = DESCRIBE_PRODUCERS.Request
        resp = c.request(DESCRIBE_PRODUCERS, topics=[
            R.TopicRequest(name=t, partition_indexes=[0]) for t in (topic, hidden)])
        codes = {t.name: t.partitions[0].error_code for t in resp.topics}
        assert codes == {topic: errors.NONE, hidden: errors.TOPIC_AUTHORIZATION_FAILED}


def test_confluent_transactional_producer_under_acls(acl_broker, tmp_path):  # noqa: F811
    """librdkafka's transactional producer with the ACLs Kafka documents for it (Write and
    Describe on the transactional id, Write on the topic) commits; without Write on the id it
    cannot even initialise, and losing it mid-transaction fails the commit."""
    topic = unique_topic("txconf")
    tid = "conf-" + uuid.uuid4().hex[:6]
    create_topics(acl_broker, topic)
    _allow(acl_broker, tmp_path, "bob", "Write", transactional_id=tid, topic=topic)
    _allow(acl_broker, tmp_path, "bob", "Describe", transactional_id=tid)
    conf = {**sasl(acl_broker, "bob"), "message.timeout.ms": 10000}
    denied = Producer({**conf, "transactional.id": "not-" + tid})
    with pytest.raises(KafkaException) as e:
        denied.init_transactions(20)
    assert e.value.args[0].code() == errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    p = Producer({**conf, "transactional.id": tid})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"committed", partition=0)
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce(topic, b"never", partition=0)
    p.flush(10)
    josefk("acls", *admin_props(tmp_path, acl_broker), "--remove", "--allow-principal",
           "User:bob", "--operation", "Write", "--transactional-id", tid, "--force")
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(20)
    assert e.value.args[0].code() == errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
