"""Compacted topics tiered, past Kafka (which refuses them; KIP-1272 is a proposal): a
segment is copied when it rolls, as any; once the cleaner rewrote a copied segment that is
still local (records dropped, several segments merged into one), the cleaner's output is
copied again and the remote segments it supersedes are deleted (Redpanda's compacted
re-upload). What local retention already removed stays remote as it was copied.

Runs on the remote log manager's thread, after the partition's copies.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .manager import Leader, LocalSegment, RemoteLogManager

log = logging.getLogger("josefk.tiered")


def unchanged(leader: Leader, local: LocalSegment) -> bool:
    """Whether the local segment is still as listed (the cleaner has not swapped it since):
    a copy read while it was swapped may hold the old log with the new index."""
    return any(s.base_offset == local.base_offset and s.next_offset == local.next_offset
               and s.size == local.size
               for s in leader.segments_to_copy(local.base_offset - 1, local.next_offset))


def recopy(rlm: RemoteLogManager, leader: Leader) -> None:
    """Copy again each copied local segment whose remote copies it no longer matches: the
    remote segments wholly inside its range tile it exactly (the cleaner's rewrite of what
    was copied; a range the remote log cuts elsewhere, as after a leader change, is left),
    but they are not that one segment at its size. The superseded ones go once the new copy
    is finished."""
    segs = leader.remote
    end = segs.end_offset
    for local in leader.segments_to_copy(-1, end + 1):
        if leader.stopped or rlm._closed:
            return
        lo, hi = local.base_offset, local.next_offset - 1
        overlapping = [s for s in segs.copied() if s.start_offset <= hi and s.end_offset >= lo]
        if not overlapping or overlapping[0].start_offset != lo \
                or overlapping[-1].end_offset != hi \
                or any(a.end_offset + 1 != b.start_offset
                       for a, b in zip(overlapping, overlapping[1:])):
            continue
        if len(overlapping) == 1 and overlapping[0].size == local.size:
            continue
        before = set(s.segment_id for s in segs.copied())
        rlm._copy_segment(leader, local)
        if not set(s.segment_id for s in segs.copied()) - before:
            continue  # swapped again meanwhile: the next pass tries again
        for seg in overlapping:
            rlm._delete_segment(leader, segs, seg)
        log.info("%s-%d: compacted [%d, %d] copied again (%d bytes), %d remote segment(s) "
                 "superseded", leader.topic, leader.partition, lo, hi, local.size,
                 len(overlapping))
    leader.set_copied(segs.end_offset)
