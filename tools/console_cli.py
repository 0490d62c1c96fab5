"""`josefk console-producer` / `console-consumer` (kafka-console-producer.sh and
kafka-console-consumer.sh) and `josefk perf-producer` / `perf-consumer`
(kafka-producer-perf-test.sh, kafka-consumer-perf-test.sh), on josefk's own wire codecs."""
from __future__ import annotations

import itertools
import json
import sys
import time
from datetime import datetime

from josefk.tools.client import KafkaError
from josefk.tools.tool_client import (EARLIEST, LATEST, MAX_BLOCK_MS, ClusterClient,
                                      partition_for_key)
from josefk.tools.group_member import GroupMember
from josefk.tools.groups_cli import commit_offsets, committed_offsets
from josefk.wire.batch import iter_headers
from josefk.wire.records import CODEC_NAMES, build_batch, iter_records

CODECS = {name: code for code, name in CODEC_NAMES.items()}


def _props(pairs, option="--property") -> dict:
    out = {}
    for kv in pairs:
        k, sep, v = kv.partition("=")
        if not sep:
            raise ValueError(f"expected {option} key=value, got {kv!r}")
        out[k] = v.encode().decode("unicode_escape")  # "\\t" on a command line means a tab
    return out


def add_commands(sub, common):
    p = common(sub.add_parser("console-producer", help="send stdin lines as records (like "
                                                       "kafka-console-producer.sh)"))
    p.add_argument("--topic", required=True, help="the topic (created when missing if the "
                                                  "broker's auto.create.topics.enable is true)")
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                   help="parse.key, key.separator, parse.headers, headers.delimiter, "
                        "headers.separator, headers.key.separator, null.marker")
    p.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE",
                   help="max.block.ms: how long to wait for the topic's metadata "
                        f"(default: {MAX_BLOCK_MS})")
    p.add_argument("--request-required-acks", type=int, default=-1,
                   help="acks: -1 (all in-sync replicas), 1 (the leader) or 0 (none)")
    p.add_argument("--compression-codec", choices=sorted(CODECS), default="none",
                   help="the batches' compression")
    p.add_argument("--batch-size", type=int, default=200, help="lines per batch when stdin "
                                                               "is not a terminal")
    p.set_defaults(func=console_producer)

    c = common(sub.add_parser("console-consumer", help="print records of a topic (like "
                                                       "kafka-console-consumer.sh)"))
    c.add_argument("--topic", required=True, help="the topic")
    c.add_argument("--from-beginning", action="store_true",
                   help="start at the log start (default: the log end), where the group has "
                        "no committed offset")
    c.add_argument("--partition", type=int, help="only this partition (default: every one)")
    c.add_argument("--offset", default=None, help="an offset, 'earliest' or 'latest' "
                                                  "(with --partition)")
    c.add_argument("--group", help="join this consumer group: consume the partitions it "
                                   "assigns, from its committed offsets, and commit positions")
    c.add_argument("--max-messages", type=int, help="exit after this many records "
                                                     "(default: never)")
    c.add_argument("--timeout-ms", type=int, help="exit after this long without a message")
    c.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"),
                   default="read_uncommitted",
                   help="read_committed: only committed transactions' records, up to the "
                        "last stable offset (as kafka-console-consumer.sh)")
    c.add_argument("--formatter", choices=("default", "json"), default="default",
                   help="how records are printed")
    c.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                   help="print.key, print.value, print.headers, print.timestamp, "
                        "print.partition, print.offset, key.separator, line.separator, "
                        "headers.separator, headers.key.separator, null.literal")
    c.add_argument("--consumer-property", action="append", default=[], metavar="KEY=VALUE",
                   help="auto.commit.interval.ms, session.timeout.ms, heartbeat.interval.ms, "
                        "max.poll.interval.ms")
    c.set_defaults(func=console_consumer)

    pp = common(sub.add_parser("perf-producer", help="producer throughput and latency test "
                                                     "(like kafka-producer-perf-test.sh)"))
    pp.add_argument("--topic", required=True, help="the topic (created when missing if the "
                                                   "broker's auto.create.topics.enable is true)")
    pp.add_argument("--num-records", type=int, required=True, help="how many records to send")
    pp.add_argument("--record-size", type=int, required=True, help="bytes per record")
    pp.add_argument("--throughput", type=float, default=-1, help="records/s cap (-1: none)")
    pp.add_argument("--batch-records", type=int, default=500, help="records per batch")
    pp.add_argument("--acks", type=int, default=1,
                    help="-1 (all in-sync replicas), 1 (the leader) or 0 (none)")
    pp.add_argument("--producer-props", nargs="+", default=[], metavar="KEY=VALUE",
                    help=f"max.block.ms: how long to wait for the topic's metadata "
                         f"(default: {MAX_BLOCK_MS})")
    pp.add_argument("--reporting-interval", type=int, default=5000, help="ms")
    pp.set_defaults(func=perf_producer)

    pc = common(sub.add_parser("perf-consumer", help="consumer throughput test (like "
                                                     "kafka-consumer-perf-test.sh)"))
    pc.add_argument("--topic", required=True, help="the topic")
    pc.add_argument("--messages", type=int, required=True, help="how many records to read")
    pc.add_argument("--fetch-size", type=int, default=1 << 20, help="bytes per fetch")
    pc.add_argument("--timeout", type=int, default=10000, help="ms without data before "
                                                               "giving up")
    pc.add_argument("--reporting-interval", type=int, default=5000, help="ms")
    pc.add_argument("--group", help="consume as a member of this group (from its committed "
                                    "offsets, else the log start), committing positions")
    pc.set_defaults(func=perf_consumer)


def _max_block_ms(pairs, option) -> int:
    """max.block.ms of a producer tool's producer properties (the one it reads)."""
    return int(_props(pairs, option).get("max.block.ms", MAX_BLOCK_MS))


def _error(e) -> int:
    print(f"ERROR {e}", file=sys.stderr)
    return 1


# -- console producer ------------------------------------------------------------------------------
class LineReader:
    """Turns an input line into (key, value, headers) the way kafka-console-producer reads it."""

    def __init__(self, props: dict):
        self.parse_key = props.get("parse.key", "false") == "true"
        self.key_sep = props.get("key.separator", "\t")
        self.parse_headers = props.get("parse.headers", "false") == "true"
        self.headers_delim = props.get("headers.delimiter", "\t")
        self.headers_sep = props.get("headers.separator", ",")
        self.header_key_sep = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")

    def _bytes(self, text):
        return None if text == self.null_marker else text.encode()

    def __call__(self, line: str):
        headers = []
        if self.parse_headers:
            head, sep, line = line.partition(self.headers_delim)
            if not sep:
                raise ValueError(f"No headers delimiter found on line: {head}")
            for h in head.split(self.headers_sep) if head else []:
                k, _, v = h.partition(self.header_key_sep)
                headers.append((k, self._bytes(v)))
        key = None
        if self.parse_key:
            k, sep, line = line.partition(self.key_sep)
            if not sep:
                raise ValueError(f"No key separator found on line: {k}")
            key = self._bytes(k)
        return key, self._bytes(line), headers


def console_producer(args) -> int:
    interactive = sys.stdin.isatty()
    try:
        read = LineReader(_props(args.property))
        codec = CODECS[args.compression_codec]
        with ClusterClient.from_args(args, "console-producer") as cc:
            n = len(cc.producer_partitions(args.topic, _max_block_ms(
                args.producer_property, "--producer-property")))
            next_partition = itertools.cycle(range(n))
            pending: dict[int, list] = {}

            def send():
                for partition, recs in pending.items():
                    cc.produce(args.topic, partition, build_batch(recs, compression=codec),
                               acks=args.request_required_acks)
                pending.clear()
            sticky = next(next_partition)
            for line in sys.stdin:
                key, value, headers = read(line.rstrip("\n"))
                partition = partition_for_key(key, n) if key is not None else sticky
                pending.setdefault(partition, []).append((key, value, headers, None))
                if interactive or sum(map(len, pending.values())) >= args.batch_size:
                    send()
                    sticky = next(next_partition)
            send()
    except (KafkaError, OSError, ValueError) as e:
        return _error(e)
    return 0


# -- console consumer --------------------------------------------------------------------------------
class Formatter:
    def __init__(self, kind: str, props: dict, topic: str):
        self.kind, self.topic = kind, topic
        self.flags = {k: props.get(f"print.{k}", "true" if k == "value" else "false") == "true"
                      for k in ("timestamp", "partition", "offset", "headers", "key", "value")}
        self.key_sep = props.get("key.separator", "\t")
        self.line_sep = props.get("line.separator", "\n")
        self.headers_sep = props.get("headers.separator", ",")
        self.header_key_sep = props.get("headers.key.separator", ":")
        self.null = props.get("null.literal", "null")

    def _text(self, b):
        return self.null if b is None else bytes(b).decode("utf-8", "replace")

    def __call__(self, partition, r, ts_type) -> str:
        if self.kind == "json":
            return json.dumps({"topic": self.topic, "partition": partition, "offset": r.offset,
                               "timestamp": r.timestamp, "timestampType": ts_type,
                               "headers": {k: self._text(v) for k, v in r.headers},
                               "key": None if r.key is None else self._text(r.key),
                               "value": None if r.value is None else self._text(r.value)}
                              ) + self.line_sep
        f, parts = self.flags, []
        if f["timestamp"]:
            parts.append(f"{ts_type}:{r.timestamp}")
        if f["partition"]:
            parts.append(f"Partition:{partition}")
        if f["offset"]:
            parts.append(f"Offset:{r.offset}")
        if f["headers"]:
            parts.append(self.headers_sep.join(f"{k}{self.header_key_sep}{self._text(v)}"
                                               for k, v in r.headers) or "NO_HEADERS")
        if f["key"]:
            parts.append(self._text(r.key))
        if f["value"]:
            parts.append(self._text(r.value))
        return self.key_sep.join(parts) + self.line_sep


def _start_positions(cc, args, partitions, committed) -> dict:
    """Where to start in each partition: --offset, else the group's committed offset, else the
    log start (--from-beginning, --offset earliest) or end."""
    out = {}
    for p in partitions:
        if args.offset not in (None, "earliest", "latest"):
            out[(args.topic, p)] = int(args.offset)
        elif (args.topic, p) in committed:
            out[(args.topic, p)] = committed[(args.topic, p)]
        else:
            earliest = args.from_beginning or args.offset == "earliest"
            out[(args.topic, p)] = cc.list_offsets(args.topic, [p], EARLIEST if earliest
                                                   else LATEST)[p]
    return out


def _records(cc, positions, read_committed):
    """Yield (partition, record, timestamp type) of one fetch round, moving ``positions`` past
    each record yielded (and past control batches and aborted transactions' batches)."""
    for topic, partition, records, _hwm, aborted in cc.fetch(positions,
                                                             read_committed=read_committed):
        tp = (topic, partition)
        start = positions[tp]
        for h in iter_headers(records):
            skip = aborted(h)  # sees every batch in order, control batches included
            if h.last_offset < start:
                continue
            if not (skip or h.is_control):
                ts_type = "LogAppendTime" if h.attributes & 0x08 else "CreateTime"
                for r in iter_records(records, h):
                    if r.offset >= start:
                        positions[tp] = r.offset + 1
                        yield partition, r, ts_type
            positions[tp] = h.last_offset + 1


class _Consumer:
    """Positions ({(topic, partition): offset}) of a data tool, committed to its group (if it
    has one) every ``auto.commit.interval.ms`` through ``tick``, and by ``commit``."""

    def __init__(self, props: dict):
        self.positions: dict = {}
        self.commit_every = int(props.get("auto.commit.interval.ms", 5000)) / 1000
        self.last_commit = time.monotonic()

    def tick(self):
        if time.monotonic() - self.last_commit >= self.commit_every:
            self.commit()
            self.last_commit = time.monotonic()


class _Assigned(_Consumer):
    """Partitions the tool chose itself (``start(partitions, committed)`` gives their
    positions); with a group, committed outside any generation (as kafka-consumer-groups.sh
    does: the group must have no live members)."""

    def __init__(self, cc, group, partitions, start, props: dict):
        super().__init__(props)
        self.group = group
        self.coordinator = cc.coordinator(group) if group else None
        self.positions = start(partitions, committed_offsets(self.coordinator, group)
                               if group else {})

    def poll(self) -> bool:
        return False

    def commit(self):
        if self.coordinator is not None:
            commit_offsets(self.coordinator, self.group, self.positions)

    def close(self):
        pass


class _Subscribed(_Consumer):
    """A member of ``group`` subscribed to ``topic``: its partitions are those the group gives
    it, positioned by ``start(partitions, committed)``; before each rejoin and on exit it commits
    its positions (as the Java consumer's auto-commit does), then it leaves the group."""

    def __init__(self, cc, group, topic, start, props: dict):
        super().__init__(props)
        self.topic, self.start = topic, start
        self.member = GroupMember(
            cc, group, [topic],
            session_timeout_ms=int(props.get("session.timeout.ms", 45000)),
            rebalance_timeout_ms=int(props.get("max.poll.interval.ms", 300000)),
            heartbeat_interval_ms=int(props.get("heartbeat.interval.ms", 3000)))

    def poll(self) -> bool:
        """Join (again) if the group asks for it; True when the partitions were (re)assigned."""
        if not self.member.needs_join():
            if not self.positions:  # nothing to fetch: wait for a rebalance, not a busy loop
                self.member.wait_rejoin(0.2)
            return False
        self.commit()
        assigned = [p for t, p in self.member.join() if t == self.topic]
        self.positions = self.start(assigned, self.member.committed())
        return True

    def commit(self):
        self.member.commit(self.positions)

    def close(self):
        self.member.close()


def console_consumer(args) -> int:
    count = 0
    try:
        fmt = Formatter(args.formatter, _props(args.property), args.topic)
        props = _props(args.consumer_property)
        with ClusterClient.from_args(args, "console-consumer") as cc:
            partitions = cc.partitions(args.topic)  # a missing topic fails before any join

            def start(parts, committed):
                return _start_positions(cc, args, parts, committed)
            if args.group and args.partition is None:
                consumer = _Subscribed(cc, args.group, args.topic, start, props)
            else:
                consumer = _Assigned(cc, args.group, partitions if args.partition is None
                                     else [args.partition], start, props)
            last_data = time.monotonic()
            try:
                while args.max_messages is None or count < args.max_messages:
                    if consumer.poll():
                        last_data = time.monotonic()  # --timeout-ms counts from the join
                    if args.timeout_ms is not None and \
                            (time.monotonic() - last_data) * 1000 > args.timeout_ms:
                        break
                    before = count
                    for partition, r, ts_type in _records(
                            cc, consumer.positions,
                            args.isolation_level == "read_committed"):
                        sys.stdout.write(fmt(partition, r, ts_type))
                        count += 1
                        if count == args.max_messages:
                            break
                    sys.stdout.flush()
                    if count > before:
                        last_data = time.monotonic()
                    consumer.tick()
                # As the Java consumer's close does: every position is committed, also one
                # reset to the log end with nothing printed.
                consumer.commit()
            except KeyboardInterrupt:
                consumer.commit()
            finally:
                consumer.close()
    except (KafkaError, OSError, ValueError) as e:
        return _error(e)
    except KeyboardInterrupt:
        pass
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


# -- perf tests ----------------------------------------------------------------------------------------
class Stats:
    """kafka-producer-perf-test's figures: a line per reporting window, then the whole run's."""

    def __init__(self, interval_ms: int):
        self.interval = interval_ms / 1000
        self.start = self.window_start = time.monotonic()
        self.latencies: list[float] = []  # ms, one per record
        self.count = self.bytes = 0
        self.w_count = self.w_bytes = 0
        self.w_lat_sum = self.w_lat_max = 0.0

    def record(self, n: int, nbytes: int, latency_ms: float) -> None:
        self.latencies.extend(itertools.repeat(latency_ms, n))
        self.count += n
        self.bytes += nbytes
        self.w_count += n
        self.w_bytes += nbytes
        self.w_lat_sum += latency_ms * n
        self.w_lat_max = max(self.w_lat_max, latency_ms)
        now = time.monotonic()
        if now - self.window_start >= self.interval:
            secs = now - self.window_start
            print(f"{self.w_count} records sent, {self.w_count / secs:.1f} records/sec "
                  f"({self.w_bytes / secs / 1048576:.2f} MB/sec), "
                  f"{self.w_lat_sum / self.w_count:.1f} ms avg latency, "
                  f"{self.w_lat_max:.1f} ms max latency.", flush=True)
            self.window_start = now
            self.w_count = self.w_bytes = 0
            self.w_lat_sum = self.w_lat_max = 0.0

    def summary(self) -> str:
        secs = max(time.monotonic() - self.start, 1e-9)
        lat = sorted(self.latencies) or [0.0]

        def pct(q):
            return int(lat[min(len(lat) - 1, int(q * len(lat)))])
        return (f"{self.count} records sent, {self.count / secs:.1f} records/sec "
                f"({self.bytes / secs / 1048576:.2f} MB/sec), {sum(lat) / len(lat):.2f} ms avg "
                f"latency, {lat[-1]:.2f} ms max latency, {pct(0.5)} ms 50th, {pct(0.95)} ms "
                f"95th, {pct(0.99)} ms 99th, {pct(0.999)} ms 99.9th.")


def perf_producer(args) -> int:
    value = b"x" * args.record_size
    stats = Stats(args.reporting_interval)
    try:
        with ClusterClient.from_args(args, "producer-performance") as cc:
            partitions = itertools.cycle(cc.producer_partitions(args.topic, _max_block_ms(
                args.producer_props, "--producer-props")))
            sent = 0
            while sent < args.num_records:
                n = min(args.batch_records, args.num_records - sent)
                batch = build_batch([(None, value, None, None)] * n)
                t0 = time.monotonic()
                cc.produce(args.topic, next(partitions), batch, acks=args.acks)
                stats.record(n, n * args.record_size, (time.monotonic() - t0) * 1000)
                sent += n
                if args.throughput > 0:  # sleep off any lead over the requested rate
                    ahead = sent / args.throughput - (time.monotonic() - stats.start)
                    if ahead > 0:
                        time.sleep(ahead)
    except (KafkaError, OSError, ValueError) as e:
        return _error(e)
    print(stats.summary())
    return 0


def perf_consumer(args) -> int:
    """Counts records from batch headers (no per-record decoding); bytes are batch bytes."""
    count = nbytes = 0
    rebalance = 0.0  # seconds spent joining the group
    start_wall = datetime.now()
    try:
        with ClusterClient.from_args(args, "consumer-performance") as cc:
            partitions = cc.partitions(args.topic)
            earliest = cc.list_offsets(args.topic, partitions, EARLIEST)

            def start(parts, committed):
                return {(args.topic, p): committed.get((args.topic, p), earliest[p])
                        for p in parts}
            consumer = _Subscribed(cc, args.group, args.topic, start, {}) if args.group \
                else _Assigned(cc, None, partitions, start, {})
            try:
                began = last_data = last_report = time.monotonic()
                while count < args.messages and \
                        (time.monotonic() - last_data) * 1000 < args.timeout:
                    joining = time.monotonic()
                    if consumer.poll():
                        last_data = time.monotonic()
                        rebalance += last_data - joining
                    positions = consumer.positions
                    for topic, partition, records, _hwm, aborted in cc.fetch(
                            positions, 100, args.fetch_size):
                        for h in iter_headers(records):
                            skip = aborted(h) or h.is_control
                            if h.last_offset >= positions[(topic, partition)]:
                                positions[(topic, partition)] = h.last_offset + 1
                                count += 0 if skip else h.count
                                nbytes += h.size
                                last_data = time.monotonic()
                    consumer.tick()
                    if (time.monotonic() - last_report) * 1000 >= args.reporting_interval:
                        last_report = time.monotonic()
                        secs = last_report - began
                        print(f"{count} records consumed, {count / secs:.1f} records/sec "
                              f"({nbytes / secs / 1048576:.2f} MB/sec)", file=sys.stderr,
                              flush=True)
                secs = max(last_data - began, 1e-9)
                consumer.commit()
            finally:
                consumer.close()
    except (KafkaError, OSError) as e:
        return _error(e)
    mb = nbytes / 1048576
    fetch_secs = max(secs - rebalance, 1e-9)
    print("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    fmt = "%Y-%m-%d %H:%M:%S:%f"
    print(f"{start_wall.strftime(fmt)[:-3]}, {datetime.now().strftime(fmt)[:-3]}, {mb:.4f}, "
          f"{mb / secs:.4f}, {count}, {count / secs:.4f}, {int(rebalance * 1000)}, "
          f"{int(fetch_secs * 1000)}, {mb / fetch_secs:.4f}, {count / fetch_secs:.4f}")
    return 0 if count >= args.messages else 1
