"""`josefk groups --list|--describe|--delete|--reset-offsets` (or `list`...), modelled on
kafka-consumer-groups.sh (and kafka-share-groups.sh for the description of a share group)."""
from __future__ import annotations

import argparse
import sys

from josefk.tools.actions import add_actions
from josefk.tools.client import KafkaError
from josefk.tools.tool_client import ClusterClient
from josefk.wire import errors
from josefk.wire.apis import (CONSUMER_GROUP_DESCRIBE, DELETE_GROUPS, DESCRIBE_GROUPS,
                              DESCRIBE_SHARE_GROUP_OFFSETS, FIND_COORDINATOR, LIST_GROUPS,
                              OFFSET_COMMIT, OFFSET_FETCH, SHARE_GROUP_DESCRIBE)
from josefk.wire.apis.consumer_protocol import ASSIGNMENT

LATEST, EARLIEST = -1, -2
RESET_TO = ("to_earliest", "to_latest", "to_offset", "shift_by")  # one of them


def add_commands(sub, common):
    g = common(sub.add_parser("groups", help="list, describe, delete consumer groups, reset "
                                             "offsets (like kafka-consumer-groups.sh)"))
    add_actions(g, {"list": (groups_list, "list the groups"),
                    "describe": (groups_describe, "the group's offsets and lag, members "
                                                  "(--members) or state (--state)"),
                    "delete": (groups_delete, "delete the group"),
                    "reset-offsets": (groups_reset_offsets, "reset the group's committed "
                                                            "offsets")},
                requires={"describe": [("group", "all_groups")], "delete": ["group"],
                          "reset-offsets": ["group", ("topic", "all_topics"), RESET_TO]})
    which = g.add_mutually_exclusive_group()
    which.add_argument("--group", help="the group")
    which.add_argument("--all-groups", action="store_true", help="--describe: every group")
    g.add_argument("--type", nargs="*", metavar="TYPE", help="--list: show each group's type "
                   "(classic, consumer); with types, only groups of those")
    view = g.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true",
                      help="--describe: the members (epochs and target assignments of consumer "
                           "groups)")
    view.add_argument("--state", action="store_true",
                      help="--describe: the group's state and epochs")
    scope = g.add_mutually_exclusive_group()
    scope.add_argument("--topic", help="--reset-offsets: TOPIC or TOPIC:P1,P2")
    scope.add_argument("--all-topics", action="store_true",
                       help="--reset-offsets: every partition the group has an offset for")
    how = g.add_mutually_exclusive_group()
    how.add_argument("--to-earliest", action="store_true",
                     help="--reset-offsets: to the log start")
    how.add_argument("--to-latest", action="store_true", help="--reset-offsets: to the log end")
    how.add_argument("--to-offset", type=int, help="--reset-offsets: to this offset")
    how.add_argument("--shift-by", type=int,
                     help="--reset-offsets: by this many from the committed offset")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true",
                      help="--reset-offsets: commit the new offsets")
    mode.add_argument("--dry-run", action="store_true",
                      help="--reset-offsets: only show them (what happens without --execute)")


def _fail(message: str) -> int:
    print(f"Error: {message}", file=sys.stderr)
    return 1


# The groups kafka-consumer-groups.sh --list shows (Kafka's ListGroupsOptions.forConsumerGroups):
# not those of other protocols on the same coordinator (Schema Registry's "sr", Connect's
# "connect"), which --type still lists.
CONSUMER_PROTOCOL_TYPES = ("consumer", "")


def groups_list(args) -> int:
    """The groups of every broker (each lists those it coordinates), as kafka-consumer-groups.sh
    --list asks them all; with ``--type``, their types and protocols."""
    try:
        listed = _listed(args, [t.lower() for t in args.type or []])
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    if args.type is None:  # as kafka-consumer-groups.sh: groups of consumers (and share groups)
        for group, g in sorted(listed.items()):
            if g.protocol_type in CONSUMER_PROTOCOL_TYPES or g.group_type == "share":
                print(group)
        return 0
    _table([("GROUP", "TYPE", "PROTOCOL")] +
           [(g.group_id, g.group_type.capitalize(), g.protocol_type or "-")
            for _, g in sorted(listed.items())])
    return 0


def _listed(args, types=()) -> dict:
    """{group id: ListGroups' entry} of every broker's groups (of ``types``, else all)."""
    listed = {}
    with ClusterClient.from_args(args) as cc:
        cc.refresh([])
        for node in sorted(cc.brokers):
            resp = cc.broker(node).request(LIST_GROUPS, states_filter=[],
                                           types_filter=list(types))
            if resp.error_code:
                raise KafkaError(resp.error_code)
            listed.update((g.group_id, g) for g in resp.groups)
    return listed


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


def describe_consumer_group(c, group):
    """The ConsumerGroupDescribe of a KIP-848 group; None for a classic group (or a broker that
    has no consumer groups)."""
    try:
        resp = c.request(CONSUMER_GROUP_DESCRIBE, group_ids=[group],
                         include_authorized_operations=False)
    except KafkaError as e:
        if e.code == errors.UNSUPPORTED_VERSION:
            return None
        raise
    d = resp.groups[0]
    if d.error_code == errors.GROUP_ID_NOT_FOUND:
        return None
    if d.error_code:
        raise KafkaError(d.error_code, d.error_message or errors.name(d.error_code))
    return d


def _partitions(assignment) -> list[tuple[str, int]]:
    return [(tp.topic_name, p) for tp in assignment.topic_partitions for p in tp.partitions]


def _assignment_text(tps) -> str:
    """Kafka's way of showing an assignment: ``topic:0,1;other:2``, or ``-``."""
    by_topic: dict = {}
    for t, p in sorted(tps):
        by_topic.setdefault(t, []).append(str(p))
    return ";".join(f"{t}:{','.join(ps)}" for t, ps in by_topic.items()) or "-"


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
    """Like kafka-consumer-groups.sh --describe: the offsets and lag (default), ``--members``
    or ``--state``; a KIP-848 group is described with ConsumerGroupDescribe (member epochs,
    target assignments), a classic one with DescribeGroups; ``--all-groups``: each group."""
    if args.all_groups:
        try:
            groups = sorted(_listed(args))
        except (KafkaError, OSError) as e:
            return _fail(str(e))
        return max((groups_describe(argparse.Namespace(**{**vars(args), "group": g,
                                                           "all_groups": False}))
                    for g in groups), default=0)
    try:
        with ClusterClient.from_args(args) as cc:
            c = cc.coordinator(args.group)
            share = share_group(c, args.group)
            if share is not None:
                _describe_share_group(args.group, *share)
                return 0
            cg = describe_consumer_group(c, args.group)
            d = describe_group(c, args.group) if cg is None else None
            if d is not None and d.group_state == "Dead":
                return _fail(f"Consumer group '{args.group}' does not exist.")
            if cg is not None:   # (member id, host, client id, [(topic, partition)])
                members = [(m.member_id, m.client_host, m.client_id, _partitions(m.assignment))
                           for m in cg.members]
            else:
                members = [(m.member_id, m.client_host, m.client_id,
                            decode_assignment(m.member_assignment)) for m in d.members]
            if args.state:
                return _print_state(args.group, c, cg, d, len(members))
            if args.members:
                return _print_members(args.group, cg, members)
            committed = committed_offsets(c, args.group)
            owner = {tp: m for m in members for tp in m[3]}
            tps = sorted(set(committed) | set(owner))
            ends = _list_offsets(cc, tps, LATEST) if tps else {}
    except (KafkaError, OSError) as e:
        return _fail(str(e))
    if not members:
        print(f"\nConsumer group '{args.group}' has no active members.")
    rows = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
             "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for tp in tps:
        cur = committed.get(tp)
        end = ends.get(tp)
        lag = end - cur if cur is not None and end is not None else None
        m = owner.get(tp)
        rows.append((args.group, tp[0], tp[1], _dash(cur), _dash(end), _dash(lag),
                     *(m[:3] if m else ("-", "-", "-"))))
    print()
    _table(rows)
    return 0


def _print_members(group, cg, members) -> int:
    if not members:
        print(f"\nConsumer group '{group}' has no active members.")
        return 0
    if cg is None:
        rows = [("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")]
        rows += [(group, mid, host, cid, len(tps), _assignment_text(tps))
                 for mid, host, cid, tps in members]
    else:
        rows = [("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                 "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")]
        rows += [(group, m.member_id, m.client_host, m.client_id, len(_partitions(m.assignment)),
                  m.member_epoch, _assignment_text(_partitions(m.assignment)),
                  cg.assignment_epoch, _assignment_text(_partitions(m.target_assignment)))
                 for m in cg.members]
    print()
    _table(rows)
    return 0


def _print_state(group, c, cg, d, n_members) -> int:
    resp = c.request(FIND_COORDINATOR, key=group, coordinator_keys=[group], key_type=0)
    co = resp.coordinators[0] if resp.coordinators else resp
    coordinator = f"{co.host}:{co.port} ({co.node_id})"
    if cg is None:
        rows = [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                (group, coordinator, d.protocol_data or "-", d.group_state, n_members)]
    else:
        rows = [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                 "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"),
                (group, coordinator, cg.assignor_name, cg.group_state, cg.group_epoch,
                 cg.assignment_epoch, n_members)]
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
            current = committed_offsets(c, args.group)
            tps = sorted(current) if args.all_topics else _partitions_of(cc, args.topic)
            earliest = _list_offsets(cc, tps, EARLIEST)
            latest = _list_offsets(cc, tps, LATEST)
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
