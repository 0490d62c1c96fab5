"""DeleteRecords (move a partition's log start offset up) and DescribeLogDirs (each log dir
with its partitions' sizes and offset lag, and the dir's total and usable bytes)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import os
from pathlib import Path

from josefk.wire import errors
from josefk.wire.apis import DELETE_RECORDS, DESCRIBE_LOG_DIRS

if TYPE_CHECKING:
    from josefk.broker.handlers.services import Services
    from josefk.wire.apis import DeleteRecordsRequest, DescribeLogDirsRequest


async def handle_delete_records(broker: Services, ctx, req: DeleteRecordsRequest):
    """Like Kafka's delayed DeleteRecords: answered once every live replica's log starts at
    the offset (`ReplicaManager.delete_records`), or at the timeout."""
    R = DELETE_RECORDS.Response
    results = iter(await broker.replicas.delete_records(
        [(t.name, p.partition_index, p.offset) for t in req.topics for p in t.partitions],
        req.timeout_ms))
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code, low = next(results)
            parts.append(R.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                        low_watermark=low, error_code=code))
        topics.append(R.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return R(topics=topics)


def handle_describe_log_dirs(broker: Services, ctx, req: DescribeLogDirsRequest):
    R = DESCRIBE_LOG_DIRS.Response
    wanted = None if req.topics is None else {
        (t.topic, p) for t in req.topics for p in t.partitions}
    by_dir: dict[str, dict[str, list]] = {os.path.abspath(d): {} for d in broker.config.log_dirs}
    for (topic, index), lg in sorted(broker.logs.all_logs().items()):
        if wanted is not None and (topic, index) not in wanted:
            continue
        topics = by_dir.setdefault(os.path.abspath(Path(lg.dir).parent), {})
        topics.setdefault(topic, []).append(R.DescribeLogDirsPartition(
            partition_index=index, partition_size=lg.size,
            offset_lag=max(lg.high_watermark - lg.log_end_offset, 0), is_future_key=False))
    offline = {os.path.abspath(d) for d in broker.logs.offline_dirs}
    results = []
    for d, topics in by_dir.items():
        if d in offline:  # failed after an I/O error: Kafka tells nothing more of it
            results.append(R.DescribeLogDirsResult(
                error_code=errors.KAFKA_STORAGE_ERROR, log_dir=d, topics=[],
                total_bytes=-1, usable_bytes=-1))
            continue
        st = os.statvfs(d)
        results.append(R.DescribeLogDirsResult(
            error_code=errors.NONE, log_dir=d,
            topics=[R.DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in topics.items()],
            total_bytes=st.f_blocks * st.f_frsize, usable_bytes=st.f_bavail * st.f_frsize))
    return R(error_code=errors.NONE, results=results)
