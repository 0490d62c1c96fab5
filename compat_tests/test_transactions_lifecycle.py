"""Transactions over their whole life: markers from a fenced coordinator epoch (raw
WriteTxnMarkers), expiry of idle transactional ids and producer state, compaction and retention
of transactional data, and broker crashes held exactly in PrepareCommit / PrepareAbort."""
from __future__ import annotations

import time
import uuid

from compat_tests import rawkafka as rk
from compat_tests.helpers import create_topic, unique_topic
from compat_tests.test_transactions import read_values
from wire import errors


def _raw_txn_batch(bootstrap, topic, pid, value):
    batch = rk.record_batch([(None, value)], int(time.time() * 1000), producer_id=pid,
                            producer_epoch=0, base_sequence=-1, transactional=True)
    with rk.RawConnection(bootstrap) as conn:
        assert rk.produce_v9(conn, topic, 0, batch)[(topic, 0)]["error_code"] == rk.NONE


def _marker(bootstrap, topic, pid, commit, coordinator_epoch) -> int:
    from broker.client import Client
    from wire.apis import WRITE_TXN_MARKERS

    R = WRITE_TXN_MARKERS.Request
    with Client(bootstrap) as c:
        resp = c.request(WRITE_TXN_MARKERS, markers=[R.WritableTxnMarker(
            producer_id=pid, producer_epoch=0, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[R.WritableTxnMarker.WritableTxnMarkerTopic(name=topic,
                                                              partition_indexes=[0])])])
    return resp.markers[0].topics[0].partitions[0].error_code


def test_write_txn_markers_from_an_older_coordinator_epoch_are_fenced(broker):
    """A partition leader keeps the coordinator epoch of each producer's last marker: a marker
    from an older coordinator epoch is refused with TRANSACTION_COORDINATOR_FENCED and writes
    nothing; the current epoch (or a newer one) is accepted."""
    topic = create_topic(broker.bootstrap, unique_topic("fenced"), 1)
    pid = 880_000 + uuid.uuid4().int % 10_000
    _raw_txn_batch(broker.bootstrap, topic, pid, b"first")
    assert _marker(broker.bootstrap, topic, pid, True, 5) == errors.NONE
    _raw_txn_batch(broker.bootstrap, topic, pid, b"second")
    assert _marker(broker.bootstrap, topic, pid, False, 4) == \
        errors.TRANSACTION_COORDINATOR_FENCED
    # the fenced abort wrote nothing: the transaction is still open for read_committed
    assert read_values(broker.bootstrap, topic, 1, "read_committed", settle=1.0) == [b"first"]
    assert _marker(broker.bootstrap, topic, pid, True, 6) == errors.NONE
    assert read_values(broker.bootstrap, topic, 1, "read_committed") == [b"first", b"second"]
    assert _marker(broker.bootstrap, topic, pid, True, 5) == \
        errors.TRANSACTION_COORDINATOR_FENCED
