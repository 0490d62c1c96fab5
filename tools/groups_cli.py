"""`josefk groups list|describe|delete|reset-offsets`, modelled on kafka-consumer-groups.sh (and
kafka-share-groups.sh for the description of a share group)."""
from __future__ import annotations

import sys

from josefk.tools.client import KafkaError
from josefk.tools.tool_client import ClusterClient
from josefk.wire import errors
from josefk.wire.apis import (DELETE_GROUPS, DESCRIBE_GROUPS, DESCRIBE_SHARE_GROUP_OFFSETS,
                              LIST_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, SHARE_GROUP_DESCRIBE)
from josefk.wire.apis.consumer_protocol import ASSIGNMENT

LATEST, EARLIEST = -1, -2


def add_commands(sub, common):
    g = sub.add_parser("groups", help="list, describe, delete consumer groups, reset offsets")
    gsub = g.add_subparsers(dest="action", required=True)
    common(gsub.add_parser("list")).set_defaults(func=groups_list)
    d = common(gsub.add_parser("describe"))
    d.add_argument("--group", required=True)
    d.set_defaults(func=groups_describe)
    x = common(gsub.add_parser("delete"))
    x.add_argument("--group", required=True)
    x.set_defaults(func=groups_delete)
    r = common(gsub.add_parser("reset-offsets"))
    r.add_argument("--group", required=True)
    r.add_argument("--topic", required=True, help="TOPIC or TOPIC:P1,P2")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int)
    how.add_argument("--shift-by", type=int)
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true")
    mode.add_argument("--dry-run", action="store_true")
    r.set_defaults(func=groups_reset_offsets)


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


def groups_list(args) -> int:
    """The groups of every broker (each lists those it coordinates), as kafka-consumer-groups.sh
    --list asks them all."""
    listed = set()
    try:
        with ClusterClient.from_args(args) as cc:
            cc.refresh([])
            for node in sorted(cc.brokers):
                resp = cc.broker(node).request(LIST_GROUPS, states_filter=[], types_filter=[])
                if resp.error_code:
                    raise KafkaError(resp.error_code)
                listed.update(g.group_id for g in resp.groups)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    for group in sorted(listed):
        print(group)
    return 0


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """Partitions in a member's ConsumerProtocolAssignment; none when it is not one."""
    try:
        got = ASSIGNMENT.from_bytes(data) if data else None
    except ValueError:  # includes DecodeError: another protocol type's assignment
        return []
    return [(tp.topic, p) for tp in got.assigned_partitions for p in tp.partitions] if got else []


def describe_group(c, group):
    resp = c.request(DESCRIBE_GROUPS, groups=[group], include_authorized_operations=False)
    d = resp.groups[0]
    if d.error_code:
        raise KafkaError(d.error_code, errors.name(d.error_code))
    return d


def committed_offsets(c, group) -> dict:
    """{(topic, partition): committed offset} of ``group``."""
    resp = c.request(OFFSET_FETCH, group_id=group, topics=None, groups=[
        OFFSET_FETCH.Request.OffsetFetchRequestGroup(group_id=group, topics=None)],
        require_stable=False)
    if resp.groups:
        g = resp.groups[0]
        code, topics = g.error_code, g.topics
    else:
        code, topics = resp.error_code, resp.topics
    if code:
        raise KafkaError(code, errors.name(code))
    return {(t.name, p.partition_index): p.committed_offset
            for t in topics for p in t.partitions if p.committed_offset >= 0}


def _list_offsets(cc, tps, timestamp) -> dict:
    """{(topic, partition): offset} for ``timestamp``, asked of the leaders; a topic whose
    offsets cannot be read (deleted since its offsets were committed) is left out."""
    by_topic = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    out = {}
    for t, ps in by_topic.items():
        try:
            out.update(((t, p), off) for p, off in cc.list_offsets(t, ps, timestamp).items())
        except KafkaError:
            pass
    return out


def share_group(c, group):
    """(ShareGroupDescribe's group, DescribeShareGroupOffsets' topics) of ``group`` if it is a
    share group (KIP-932), else None."""
    if SHARE_GROUP_DESCRIBE.key not in c.versions:
        return None
    d = c.request(SHARE_GROUP_DESCRIBE, group_ids=[group],
                  include_authorized_operations=False).groups[0]
    if d.error_code == errors.GROUP_ID_NOT_FOUND:
        return None
    if d.error_code:
        raise KafkaError(d.error_code, d.error_message or errors.name(d.error_code))
    Q = DESCRIBE_SHARE_GROUP_OFFSETS.Request
    g = c.request(DESCRIBE_SHARE_GROUP_OFFSETS, groups=[
        Q.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]).groups[0]
    if g.error_code:
        raise KafkaError(g.error_code, g.error_message or errors.name(g.error_code))
    return d, g.topics


def _describe_share_group(group, d, topics) -> None:
    """As kafka-share-groups.sh --describe: each share-partition's start offset and lag (the
    records from it to the end not yet acknowledged or archived), then the members."""
    print(f"\nShare group '{group}' ({d.group_state}, epoch {d.group_epoch}) has "
          f"{len(d.members) or 'no active'} member{'s' if len(d.members) != 1 else ''}.")
    rows = [("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LEADER-EPOCH", "LAG")]
    for t in sorted(topics, key=lambda t: t.topic_name):
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            rows.append((group, t.topic_name, p.partition_index, _dash(_known(p.start_offset)),
                         _dash(_known(p.leader_epoch)), _dash(_known(p.lag))))
    print()
    _table(rows)
    if d.members:
        rows = [("CONSUMER-ID", "HOST", "CLIENT-ID", "MEMBER-EPOCH", "ASSIGNMENT")]
        for m in d.members:
            assigned = ",".join(f"{tp.topic_name}:{p}" for tp in m.assignment.topic_partitions
                                for p in tp.partitions)
            rows.append((m.member_id, m.client_host, m.client_id, m.member_epoch,
                         assigned or "-"))
        print()
        _table(rows)


def _known(v):
    return None if v is None or v < 0 else v


def groups_describe(args) -> int:
    try:
        with ClusterClient.from_args(args) as cc:
            c = cc.coordinator(args.group)
            share = share_group(c, args.group)
            if share is not None:
                _describe_share_group(args.group, *share)
                return 0
            d = describe_group(c, args.group)
            if d.group_state == "Dead":
                return _fail(f"Consumer group '{args.group}' does not exist.")
            committed = committed_offsets(c, args.group)
            owner = {}
            for m in d.members:
                for tp in decode_assignment(m.member_assignment):
                    owner[tp] = m
            tps = sorted(set(committed) | set(owner))
            ends = _list_offsets(cc, tps, LATEST) if tps else {}
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    if not d.members:
        print(f"\nConsumer group '{args.group}' has no active members.")
    rows = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
             "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for tp in tps:
        cur = committed.get(tp)
        end = ends.get(tp)
        lag = end - cur if cur is not None and end is not None else None
        m = owner.get(tp)
        rows.append((args.group, tp[0], tp[1], _dash(cur), _dash(end), _dash(lag),
                     m.member_id if m else "-", m.client_host if m else "-",
                     m.client_id if m else "-"))
    print()
    _table(rows)
    return 0


def _dash(v):
    return "-" if v is None else v


def _table(rows):
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print(" ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())


def groups_delete(args) -> int:
    try:
        with ClusterClient.from_args(args) as cc:
            resp = cc.coordinator(args.group).request(DELETE_GROUPS, groups_names=[args.group])
            code = resp.results[0].error_code
            if code:
                raise KafkaError(code, errors.name(code))
    except (KafkaError, OSError) as e:
        return _fail(f"Deletion of consumer group '{args.group}' failed: {e}")
    print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0


def _partitions_of(cc, spec) -> list[tuple[str, int]]:
    topic, _, parts = spec.partition(":")
    if parts:
        return [(topic, int(p)) for p in parts.split(",")]
    return [(topic, p) for p in cc.partitions(topic)]


def commit_offsets(c, group, offsets: dict, generation: int = -1, member_id: str = "") -> None:
    """Commit {(topic, partition): offset} for ``group``: by default outside any generation (as
    kafka-consumer-groups.sh does: the group must have no live members), else as that member."""
    R = OFFSET_COMMIT.Request
    by_topic = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append(R.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_leader_epoch=-1,
            committed_metadata=""))
    resp = c.request(OFFSET_COMMIT, group_id=group, generation_id_or_member_epoch=generation,
                     member_id=member_id, retention_time_ms=-1, topics=[
                         R.OffsetCommitRequestTopic(name=t, partitions=ps)
                         for t, ps in by_topic.items()])
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                raise KafkaError(p.error_code, errors.name(p.error_code))


def groups_reset_offsets(args) -> int:
    try:
        with ClusterClient.from_args(args) as cc:
            c = cc.coordinator(args.group)
            d = describe_group(c, args.group)
            if d.group_state not in ("Empty", "Dead"):
                return _fail(f"Assignments can only be reset if the group '{args.group}' is "
                             f"inactive, but the current state is {d.group_state}.")
            tps = _partitions_of(cc, args.topic)
            earliest = _list_offsets(cc, tps, EARLIEST)
            latest = _list_offsets(cc, tps, LATEST)
            current = committed_offsets(c, args.group)
            new = {}
            for tp in tps:
                if args.to_earliest:
                    target = earliest[tp]
                elif args.to_latest:
                    target = latest[tp]
                elif args.to_offset is not None:
                    target = args.to_offset
                else:
                    target = current.get(tp, latest[tp]) + args.shift_by
                new[tp] = min(max(target, earliest[tp]), latest[tp])
            if args.execute:
                commit_offsets(c, args.group, new)
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    rows = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    rows += [(args.group, t, p, off) for (t, p), off in sorted(new.items())]
    print()
    _table(rows)
    return 0
