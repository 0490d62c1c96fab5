from josefk.mirror.checkpoint import more_recent
from josefk.mirror.records import Checkpoint


def cp(upstream, downstream):
    return Checkpoint("g", "a.t", 0, upstream, downstream, "")


def test_checkpoints_move_forward_or_follow_a_rewind():
    assert more_recent(cp(10, 10), None)                # the first
    assert more_recent(cp(12, 11), cp(10, 10))          # further downstream
    assert not more_recent(cp(10, 10), cp(10, 10))      # a repeat
    assert not more_recent(cp(12, 9), cp(10, 10))       # never back downstream
    assert more_recent(cp(5, 5), cp(10, 10))            # the source group was rewound
