"""ListOffsets v0's "offsets before a timestamp" over several segments, as Kafka 3.9 answers it:
segment base offsets by last-modified time, plus the log end offset, newest first."""
import os

from josefk.broker.handlers.list_offsets import EARLIEST, LATEST, _offsets_before
from tests.storage.logs import append, cfg, mk
from josefk.storage import Log


def _three_segments(tmp_path):
    log = Log(tmp_path / "t-0", cfg(segment_bytes=300))
    for _ in range(3):
        append(log, mk(4))          # each batch fills a segment: bases 0, 4, 8
    assert [b for b, _m, _s in log.segment_times()][:3] == [0, 4, 8]
    for i, seg in enumerate(sorted((tmp_path / "t-0").glob("*.log"))):
        os.utime(seg, (1000 * (i + 1), 1000 * (i + 1)))  # modified at 1000 s, 2000 s, ...
    return log


def test_offsets_before_timestamps(tmp_path):
    log = _three_segments(tmp_path)
    segments = log.segment_times()
    leo = log.log_end_offset
    bases = [b for b, _m, _s in segments]
    # the active segment holds data: the log end offset counts as modified "now"
    assert _offsets_before(log, LATEST, 100, -1) == sorted([leo] + bases, reverse=True)
    assert _offsets_before(log, LATEST, 2, -1) == [leo, bases[-1]]
    assert _offsets_before(log, EARLIEST, 100, -1) == [0]
    assert _offsets_before(log, 2_500_000, 100, -1) == [4, 0]   # segments modified by 2500 s
    assert _offsets_before(log, 2_500_000, 1, -1) == [4]
    assert _offsets_before(log, 999_999, 100, -1) == []         # nothing that old
    log.close()


def test_consumers_never_see_offsets_past_the_high_watermark(tmp_path):
    log = _three_segments(tmp_path)
    log.high_watermark = 6
    assert _offsets_before(log, LATEST, 100, -1)[:2] == [6, 4]
    assert _offsets_before(log, LATEST, 100, 1)[0] == log.log_end_offset  # a replica may
    log.close()
