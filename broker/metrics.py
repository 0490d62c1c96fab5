"""Prometheus metrics, served on ``josefk.metrics.port`` (off when unset) under Kafka's names as
the JMX exporter shows them (``kafka_server_brokertopicmetrics_bytesin_total``,
``kafka_network_requestmetrics_totaltimems``...).

The hot path only adds to plain counters: handlers are wrapped (never changed) to time each
request and count its error codes; Produce counts bytes and records per topic (records from the
batch header), Fetch the bytes sent to consumers. Everything else (partitions, log sizes and offsets, ISR health, controller,
consumer lag) is read from the broker when Prometheus scrapes. The endpoint is an asyncio server
on the broker's own loop, so collecting never races the loop.
"""
from __future__ import annotations

import asyncio
import logging
import math
import time
from bisect import bisect_left
from collections import defaultdict
from functools import partial
from types import CoroutineType
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import (CollectorRegistry, CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)

from josefk.broker.handlers import NO_RESPONSE
from josefk.broker.security.listeners import Reply
from josefk.wire import errors
from josefk.wire.apis import API_BY_KEY, FETCH, PRODUCE
from josefk.wire.apis.fetch import fetching_replica_id
from josefk.wire.batch import record_count

if TYPE_CHECKING:
    from josefk.broker.client_metrics import ClientMetricsManager
    from josefk.broker.config import BrokerConfig
    from josefk.broker.control.metadata import MetadataStore
    from josefk.broker.replication.replica import ReplicaManager
    from josefk.broker.security.quotas import QuotaManager
    from josefk.coordinator import GroupCoordinator
    from josefk.storage.manager import LogManager

log = logging.getLogger("josefk.metrics")

BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, math.inf)
IDLE_SAMPLE_S = 1.0


class Histogram:
    __slots__ = ("counts", "sum")

    def __init__(self):
        self.counts = [0] * len(BUCKETS_MS)
        self.sum = 0.0

    def observe(self, ms: float) -> None:
        self.counts[bisect_left(BUCKETS_MS, ms)] += 1
        self.sum += ms

    def buckets(self):
        total = 0
        for bound, n in zip(BUCKETS_MS, self.counts):
            total += n
            yield ("+Inf" if bound == math.inf else str(bound)), total


class RequestStats:
    __slots__ = ("queue", "local", "total", "errors", "versions")

    def __init__(self):
        self.queue, self.local, self.total = Histogram(), Histogram(), Histogram()
        self.errors = defaultdict(int)  # error code -> count
        self.versions = defaultdict(int)  # api version -> requests


class TopicStats:
    __slots__ = ("bytes_in", "messages_in", "bytes_out")

    def __init__(self):
        self.bytes_in = self.messages_in = self.bytes_out = 0


def _response_errors(errs, ctx, req, resp) -> None:
    if resp is not NO_RESPONSE:
        _count_errors(resp, errs)


def _count_errors(obj, counts) -> None:
    """Add every error_code in a response object (nested lists included) to ``counts``."""
    for name in obj.__slots__:
        v = getattr(obj, name)
        if name == "error_code":
            counts[v] += 1
        elif type(v) is list and v and hasattr(v[0], "__slots__"):
            for item in v:
                _count_errors(item, counts)


class BrokerMetrics:
    def __init__(self, config: BrokerConfig, metadata: MetadataStore, replicas: ReplicaManager,
                 logs: LogManager, groups: GroupCoordinator, quotas: QuotaManager,
                 client_metrics: ClientMetricsManager):
        """What a scrape reads: the settings, the metadata, the partitions and their logs, the
        groups (their lag), the quotas' rates and the clients' pushed metrics."""
        self.config = config
        self.metadata = metadata
        self.replicas = replicas
        self.logs = logs
        self.groups = groups
        self.quotas = quotas
        self.client_metrics = client_metrics
        self.links = None  # broker.links.LinkManager: the mirror partitions led here
        self.requests: dict[str, RequestStats] = defaultdict(RequestStats)
        self.topics: dict[str, TopicStats] = defaultdict(TopicStats)
        self.idle_ratio = 1.0
        self.remote_task_idle = self.remote_reader_idle = 1.0
        self._remote_busy: tuple[float, float] | None = None
        self.server = None
        self._sampler = None
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    # -- the hot path ------------------------------------------------------------------------------
    def instrument(self, handlers: dict) -> dict:
        return {key: self._wrap(API_BY_KEY[key].name, key, fn) for key, fn in handlers.items()}

    def _wrap(self, name, key, handler):
        stats = self.requests[name]
        queue, local, total = stats.queue, stats.local, stats.total
        qc, lc, tc = queue.counts, local.counts, total.counts
        count = self._counter(key, stats.errors)
        clock = time.monotonic

        def timed(broker, ctx, req):
            # Histograms updated inline: this runs for every request.
            start = clock()
            ms = (start - ctx.connection.received_at) * 1000
            qc[bisect_left(BUCKETS_MS, ms)] += 1
            queue.sum += ms
            stats.versions[ctx.header.api_version] += 1
            result = handler(broker, ctx, req)
            ms = (clock() - start) * 1000
            i = bisect_left(BUCKETS_MS, ms)
            lc[i] += 1
            local.sum += ms
            if type(result) is CoroutineType:
                return self._finish_later(total, count, ctx, req, result, start)
            tc[i] += 1  # answered at once: its total time is its local time
            total.sum += ms
            count(ctx, req, result.response if type(result) is Reply else result)
            return result
        return timed

    @staticmethod
    async def _finish_later(total, count, ctx, req, result, start):
        resp = await result
        total.observe((time.monotonic() - start) * 1000)
        count(ctx, req, resp.response if type(resp) is Reply else resp)
        return resp

    def _counter(self, key, errs):
        """What a response of API ``key`` adds up: its error codes, and for Produce and Fetch
        the bytes and records per topic. Called as fn(ctx, req, resp)."""
        fn = {PRODUCE.key: self._produced, FETCH.key: self._fetched}.get(key, _response_errors)
        return partial(fn, errs)

    def _produced(self, errs, ctx, req, resp) -> None:
        """Bytes and records appended per topic, and the partitions' error codes."""
        topics = self.topics
        answers = None if resp is NO_RESPONSE else resp.responses  # acks=0: no answer
        for i, td in enumerate(req.topic_data):
            t = topics[td.name]
            parts = answers[i].partition_responses if answers is not None else None
            for j, pd in enumerate(td.partition_data):
                if parts is not None:
                    code = parts[j].error_code
                    errs[code] += 1
                    if code:
                        continue
                records = pd.records
                if records is not None:
                    t.bytes_in += len(records)
                    t.messages_in += record_count(records)

    def _fetched(self, errs, ctx, req, resp) -> None:
        """Bytes sent to consumers per topic (followers' fetches are replication, as in Kafka),
        and the error codes."""
        errs[resp.error_code or 0] += 1
        consumer = fetching_replica_id(req, ctx.version) < 0
        by_id = self.metadata.topics_by_id
        for tr in resp.responses:
            t = None
            for p in tr.partitions:
                errs[p.error_code] += 1
                if consumer and p.records:
                    if t is None:
                        name = tr.topic or getattr(by_id.get(tr.topic_id), "name", None)
                        if name is None:
                            break
                        t = self.topics[name]
                    t.bytes_out += len(p.records)

    # -- the endpoint ---------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        host, port = cfg.get("josefk.metrics.host", "127.0.0.1"), cfg.int("josefk.metrics.port")
        self.server = await asyncio.start_server(self._serve, host, port)
        self._sampler = asyncio.ensure_future(self._sample_idle())
        log.info("metrics on http://%s:%d/metrics", host, port)

    async def stop(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader, writer) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            path = request.split(b" ", 2)[1] if request.count(b" ") >= 2 else b""
            if path.split(b"?")[0] in (b"/", b"/metrics"):
                body, status = generate_latest(self.registry), b"200 OK"
            else:
                body, status = b"not found\n", b"404 Not Found"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " +
                         CONTENT_TYPE_LATEST.encode() + b"\r\nContent-Length: " +
                         str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                ConnectionError):
            pass
        finally:
            writer.close()

    async def _sample_idle(self) -> None:
        """The event loop's idle share: 1 - the loop thread's CPU time over wall time."""
        cpu, wall = time.thread_time(), time.monotonic()
        while True:
            await asyncio.sleep(IDLE_SAMPLE_S)
            cpu2, wall2 = time.thread_time(), time.monotonic()
            busy = (cpu2 - cpu) / max(wall2 - wall, 1e-9)
            self.idle_ratio = min(max(1.0 - busy, 0.0), 1.0)
            self._sample_remote_idle(wall2 - wall)
            cpu, wall = cpu2, wall2

    def _sample_remote_idle(self, wall_s: float) -> None:
        """The remote log manager's task thread and reader pool: their idle shares over the
        last second, from the seconds they were busy."""
        rlm = self.replicas.remote
        if rlm is None:
            return
        task, read = rlm.task_busy_s, rlm.read_busy_s
        last_task, last_read = self._remote_busy or (task, read)
        self._remote_busy = task, read
        wall_s = max(wall_s, 1e-9)
        self.remote_task_idle = min(max(1.0 - (task - last_task) / wall_s, 0.0), 1.0)
        self.remote_reader_idle = min(max(
            1.0 - (read - last_read) / (wall_s * rlm.reader_threads), 0.0), 1.0)

    # -- scraping: a prometheus_client collector ----------------------------------------------------------
    def collect(self):
        yield from self._request_metrics()
        yield from self._topic_metrics()
        yield from self._partition_metrics()
        yield from self._group_metrics()
        yield from self._quota_metrics()
        yield from self._client_metrics()
        yield from self._remote_metrics()
        yield from self._link_metrics()
        idle = GaugeMetricFamily("kafka_network_socketserver_networkprocessoravgidlepercent",
                                 "Share of time the event loop was idle (last second)")
        idle.add_metric([], self.idle_ratio)
        yield idle

    def _remote_metrics(self):
        """Tiered storage, per topic under Kafka's BrokerTopicMetrics names: what is not
        copied yet (RemoteCopyLagBytes / Segments), what is past retention and not deleted yet
        (RemoteDeleteLagBytes / Segments), the remote log's size and segment count
        (RemoteLogSizeBytes, RemoteLogMetadataCount), and the copy, fetch and delete meters
        as totals (Remote*PerSec)."""
        rlm = self.replicas.remote
        if rlm is None:
            return
        prefix = "kafka_server_brokertopicmetrics_"
        gauges = [GaugeMetricFamily(prefix + name, doc, labels=["topic"]) for name, doc in (
            ("remotecopylagbytes", "Bytes of rolled segments not copied to the remote log yet"),
            ("remotecopylagsegments", "Rolled segments not copied to the remote log yet"),
            ("remotedeletelagbytes", "Bytes of remote segments past retention, not deleted yet"),
            ("remotedeletelagsegments", "Remote segments past retention, not deleted yet"),
            ("remotelogsizebytes", "Bytes of the remote log's segments"),
            ("remotelogmetadatacount", "Segments of the remote log"))]
        by_topic: dict[str, list[int]] = defaultdict(lambda: [0] * len(gauges))
        for (topic, _index), leader in list(rlm.leaders.items()):
            sums, remote = by_topic[topic], leader.remote
            for i, value in enumerate((
                    leader.copy_lag_bytes, leader.copy_lag_segments, leader.delete_lag_bytes,
                    leader.delete_lag_segments, remote.size if remote is not None else 0,
                    len(remote.copied()) if remote is not None else 0)):
                sums[i] += value
        for topic, sums in sorted(by_topic.items()):
            for fam, value in zip(gauges, sums):
                fam.add_metric([topic], value)
        for i, fam in enumerate(gauges):  # the broker's totals: no topic label, as Kafka's
            fam.add_sample(fam.name, {}, sum(sums[i] for sums in by_topic.values()))
        yield from gauges
        meters = {attr: CounterMetricFamily(prefix + name, doc, labels=["topic"])
                  for attr, name, doc in (
                      ("copy_bytes", "remotecopybytespersec", "Bytes copied to the remote log"),
                      ("copy_requests", "remotecopyrequestspersec", "Segments copied"),
                      ("copy_errors", "remotecopyerrorspersec", "Failed copy passes"),
                      ("fetch_bytes", "remotefetchbytespersec", "Bytes read from the remote log"),
                      ("fetch_requests", "remotefetchrequestspersec", "Remote reads"),
                      ("fetch_errors", "remotefetcherrorspersec", "Failed remote reads"),
                      ("delete_requests", "remotedeleterequestspersec",
                       "Remote segments deleted"))}
        stats = sorted(rlm.stats.items())
        for attr, fam in meters.items():
            for topic, st in stats:
                fam.add_metric([topic], getattr(st, attr))
            fam.add_sample(fam.name + "_total", {}, sum(getattr(st, attr) for _t, st in stats))
        yield from meters.values()
        for name, doc, value in (
                ("kafka_log_remote_remotelogmanager_remotelogmanagertasksavgidlepercent",
                 "Share of the last second the remote log manager's task thread was idle",
                 self.remote_task_idle),
                ("kafka_log_remote_remotestoragethreadpool_remotelogreadertaskqueuesize",
                 "Remote reads waiting for a reader thread", rlm.reads_waiting),
                ("kafka_log_remote_remotestoragethreadpool_remotelogreaderavgidlepercent",
                 "Share of the last second the remote log reader threads were idle",
                 self.remote_reader_idle)):
            fam = GaugeMetricFamily(name, doc)
            fam.add_metric([], value)
            yield fam
        gets = CounterMetricFamily("josefk_remote_storage_get_requests",
                                   "Ranged reads sent to the object store (cache misses)")
        gets.add_metric([], rlm.cache.requests)
        yield gets

    def _link_metrics(self):
        """Mirror topics' partitions led here (cluster links, `links.PartitionStatus`): their
        lag behind the source in records, bytes and milliseconds, the latency of their last
        mirrored batch, whether they stopped (the reason is logged) and the offsets resumed
        past."""
        if self.links is None:
            return
        labels = ["link", "topic", "partition"]
        families = {
            "lag_records": GaugeMetricFamily(
                "josefk_cluster_link_mirror_lag_records",
                "Records the mirror partition is behind its source's high watermark",
                labels=labels),
            "lag_bytes": GaugeMetricFamily(
                "josefk_cluster_link_mirror_lag_bytes",
                "Bytes the mirror partition is behind its source (records behind times the "
                "bytes per offset of the last batches mirrored)", labels=labels),
            "lag_ms": GaugeMetricFamily(
                "josefk_cluster_link_mirror_lag_ms",
                "Milliseconds since the mirror partition was last caught up with its source "
                "(0 while it is and the source answers)", labels=labels),
            "latency_ms": GaugeMetricFamily(
                "josefk_cluster_link_mirror_latency_ms",
                "How old the last batch mirrored was when appended (now minus its max "
                "timestamp)", labels=labels)}
        stopped = GaugeMetricFamily("josefk_cluster_link_mirror_partition_stopped",
                                    "1 if the mirror partition stopped until an operator acts",
                                    labels=labels)
        skipped = CounterMetricFamily(
            "josefk_cluster_link_mirror_skipped_offsets",
            "Offsets of the source never mirrored: an operator resumed the partition at the "
            "source's log start past them", labels=labels)
        resumes = CounterMetricFamily("josefk_cluster_link_mirror_resumes",
                                      "Times an operator resumed the stopped mirror partition",
                                      labels=labels)
        for st in self.links.status():
            where = [st.link, st.topic, str(st.partition)]
            for attr, family in families.items():
                value = getattr(st, attr)
                if value is not None:
                    family.add_metric(where, value)
            stopped.add_metric(where, 0 if st.failure is None else 1)
            skipped.add_metric(where, st.skipped)
            resumes.add_metric(where, st.resumes)
        yield from families.values()
        yield stopped
        yield skipped
        yield resumes

    def _client_metrics(self):
        """What clients pushed (KIP-714), labelled by client; a counter's name ends _total."""
        for name, kind, help_, series in self.client_metrics.families():
            family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            labels = sorted({k for lab, _v in series for k in lab})
            fam = family(name, help_, labels=labels)
            for lab, value in series:
                fam.add_metric([lab.get(k, "") for k in labels], value)
            yield fam

    def _request_metrics(self):
        reqs = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                   "Requests handled", labels=["request"])
        # Kafka's RequestsPerSec meter is tagged with the request's version (KIP-272).
        per_version = CounterMetricFamily("kafka_network_requestmetrics_requestspersec",
                                          "Requests handled per version",
                                          labels=["request", "version"])
        errs = CounterMetricFamily("kafka_network_requestmetrics_errors",
                                   "Error codes in responses", labels=["request", "error"])
        hists = {attr: HistogramMetricFamily(f"kafka_network_requestmetrics_{name}",
                                             f"{what} in ms", labels=["request"])
                 for attr, name, what in (
                     ("queue", "requestqueuetimems", "Time from arrival to handling"),
                     ("local", "localtimems", "Time the handler worked on the request"),
                     ("total", "totaltimems", "Time from handling to the response"))}
        for name, s in sorted(self.requests.items()):
            n = sum(s.total.counts)
            if not n:
                continue
            reqs.add_metric([name], n)
            for v, count in sorted(s.versions.items()):
                per_version.add_metric([name, str(v)], count)
            for attr, fam in hists.items():
                h = getattr(s, attr)
                fam.add_metric([name], list(h.buckets()), h.sum)
            for code, n in sorted(s.errors.items()):
                errs.add_metric([name, errors.name(code)], n)
        yield reqs
        yield per_version
        yield errs
        yield from hists.values()

    def _quota_metrics(self):
        """Each throttled client's measured rate, as Kafka's per-client quota sensors show it
        (type=Produce/Fetch byte-rate, type=Request request-time in percent of a thread)."""
        from josefk.broker.security.quotas import CLIENT, FETCH, PRODUCE, REQUEST, USER

        names = {PRODUCE: ("kafka_server_produce_byte_rate", "Bytes produced per second"),
                 FETCH: ("kafka_server_fetch_byte_rate", "Bytes fetched per second"),
                 REQUEST: ("kafka_server_request_request_time",
                           "Broker time on the client's requests, percent of one thread")}
        fams = {k: GaugeMetricFamily(n, doc, labels=["user", "client_id"])
                for k, (n, doc) in names.items()}
        now = time.monotonic()
        for (key, entity), rate in list(self.quotas.rates.items()):
            if key in fams:
                e = dict(entity)
                fams[key].add_metric([e.get(USER, ""), e.get(CLIENT, "")], rate.rate(now))
        yield from fams.values()

    def _topic_metrics(self):
        fams = {attr: CounterMetricFamily(name, doc, labels=["topic"]) for attr, name, doc in (
            ("bytes_in", "kafka_server_brokertopicmetrics_bytesin", "Bytes appended"),
            ("messages_in", "kafka_server_brokertopicmetrics_messagesin", "Records appended"),
            ("bytes_out", "kafka_server_brokertopicmetrics_bytesout", "Bytes fetched by "
                                                                      "consumers"))}
        for topic, s in sorted(self.topics.items()):
            for attr, fam in fams.items():
                fam.add_metric([topic], getattr(s, attr))
        yield from fams.values()

    def _partition_metrics(self):
        parts = list(self.replicas.partitions.values())
        md = self.metadata
        me = self.config.node_id
        active = md.controller_id == me
        gauges = {
            "kafka_server_replicamanager_partitioncount": len(parts),
            "kafka_server_replicamanager_leadercount": sum(p.is_leader for p in parts),
            "kafka_server_replicamanager_underreplicatedpartitions": sum(
                p.is_leader and len(p.isr) < len(p.replicas) for p in parts),
            "kafka_controller_kafkacontroller_activecontrollercount": int(active),
            "kafka_controller_kafkacontroller_offlinepartitionscount": sum(
                p.leader < 0 for t in md.topics.values() for p in t.partitions) if active else 0,
        }
        for name, value in gauges.items():
            g = GaugeMetricFamily(name, name.rsplit("_", 1)[1])
            g.add_metric([], value)
            yield g
        logs = {attr: GaugeMetricFamily(f"kafka_log_log_{attr}", doc,
                                        labels=["topic", "partition"])
                for attr, doc in (("size", "Bytes of the partition's segments"),
                                  ("logstartoffset", "First offset kept"),
                                  ("logendoffset", "Next offset to be written"),
                                  ("numlogsegments", "Segments"))}
        for (topic, index), lg in sorted(self.logs.all_logs().items()):
            labels = [topic, str(index)]
            logs["size"].add_metric(labels, lg.size)
            logs["logstartoffset"].add_metric(labels, lg.log_start_offset)
            logs["logendoffset"].add_metric(labels, lg.log_end_offset)
            logs["numlogsegments"].add_metric(labels, lg.num_segments)
        yield from logs.values()

    def _group_metrics(self):
        """Lag of every group this broker coordinates, on the partitions it has a replica of
        (a follower's high watermark trails the leader's by at most a fetch)."""
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus committed "
                                "offset", labels=["consumergroup", "topic", "partition"])
        cur = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset",
                                labels=["consumergroup", "topic", "partition"])
        replicas = self.replicas
        for gid, group in sorted(self.groups.groups.items()):
            for (topic, index), rec in sorted(group.offsets.items()):
                labels = [gid, topic, str(index)]
                offset = rec.offset_and_metadata.offset
                cur.add_metric(labels, offset)
                part = replicas.get(topic, index)
                if part is not None:
                    lag.add_metric(labels, max(part.log.high_watermark - offset, 0))
        yield lag
        yield cur

