from broker.producer_state import ProducerStateTable
from wire import errors
from wire.batch import validate_batches
from wire.records import build_batch


def header(pid, epoch, seq, count=1):
    buf = build_batch([(None, b"v", [], None)] * count, producer_id=pid, producer_epoch=epoch,
                      base_sequence=seq)
    return validate_batches(buf)[0]


def test_unknown_producer_is_accepted_with_any_sequence():
    t = ProducerStateTable()
    assert t.check(header(7, 0, 42)) == (errors.NONE, None)


def test_in_order_batches_then_duplicate_gets_original_offsets():
    t = ProducerStateTable()
    h0, h1 = header(1, 0, 0, 3), header(1, 0, 3, 2)
    t.update(h0, 100, 102)
    assert t.check(h1) == (errors.NONE, None)
    t.update(h1, 103, 104)
    assert t.check(header(1, 0, 0, 3)) == (errors.NONE, (100, 102))
    assert t.check(header(1, 0, 3, 2)) == (errors.NONE, (103, 104))


def test_gap_is_out_of_order():
    t = ProducerStateTable()
    t.update(header(1, 0, 0, 3), 0, 2)
    assert t.check(header(1, 0, 5))[0] == errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs():
    t = ProducerStateTable()
    t.update(header(1, 3, 0), 0, 0)
    assert t.check(header(1, 2, 1))[0] == errors.INVALID_PRODUCER_EPOCH
    assert t.check(header(1, 4, 0)) == (errors.NONE, None)
    assert t.check(header(1, 4, 9))[0] == errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_only_last_five_batches_are_remembered():
    t = ProducerStateTable()
    for i in range(7):
        t.update(header(1, 0, i), i, i)
    assert t.check(header(1, 0, 6)) == (errors.NONE, (6, 6))
    assert t.check(header(1, 0, 1))[0] == errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequence_wraps_at_int32():
    t = ProducerStateTable()
    t.update(header(1, 0, 2**31 - 1), 0, 0)
    assert t.check(header(1, 0, 0)) == (errors.NONE, None)


def test_rebuild_from_log_headers():
    t = ProducerStateTable()
    h = header(9, 1, 0, 4)
    h.base_offset = 50
    t.rebuild([h], None)
    assert t.check(header(9, 1, 0, 4)) == (errors.NONE, (50, 53))
