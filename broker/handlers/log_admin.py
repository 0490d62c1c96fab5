"""DeleteRecords (move a partition's log start offset up) and DescribeLogDirs (each log dir
with its partitions' sizes and offset lag, and the dir's total and usable bytes)."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from josefk.storage.errors import OffsetOutOfRange
from josefk.wire import errors
from josefk.wire.apis import DELETE_RECORDS, DESCRIBE_LOG_DIRS

HIGH_WATERMARK = -1  # DeleteRecords offset meaning "everything below the high watermark"


async def handle_delete_records(broker, ctx, req):
    R = DELETE_RECORDS.Response
    deadline = asyncio.get_running_loop().time() + req.timeout_ms / 1000
    waits = []
    topics = []
    for t in req.topics:
        parts = []
        topics.append(R.DeleteRecordsTopicResult(name=t.name, partitions=parts))
        for p in t.partitions:
            res = R.DeleteRecordsPartitionResult(partition_index=p.partition_index,
                                                 low_watermark=-1, error_code=errors.NONE)
            parts.append(res)
            part = broker.replicas.leader_partition(t.name, p.partition_index)
            if part is None:
                res.error_code = broker.not_hosted_error(t.name, p.partition_index)
                continue
            lg = part.log
            offset = lg.high_watermark if p.offset == HIGH_WATERMARK else p.offset
            try:
                # Dropping whole segments unlinks files: off the event loop (the log locks).
                await asyncio.to_thread(lg.delete_records_before, offset)
            except OffsetOutOfRange:
                res.error_code = errors.OFFSET_OUT_OF_RANGE
                continue
            waits.append(_wait_for_replicas(broker, part, offset, deadline, res))
    # Like Kafka's delayed DeleteRecords: answer once every live replica's log starts at the
    # offset (the followers move theirs from the leader's in fetch responses), or time out.
    await asyncio.gather(*waits)
    return R(topics=topics)


async def _wait_for_replicas(broker, part, offset, deadline, res) -> None:
    loop = asyncio.get_running_loop()
    while True:
        if not part.is_leader:
            res.error_code = errors.NOT_LEADER_OR_FOLLOWER
            return
        low = part.low_watermark(broker.metadata.brokers)
        if low >= offset:
            res.low_watermark = low
            return
        remaining = deadline - loop.time()
        if remaining <= 0:
            res.error_code = errors.REQUEST_TIMED_OUT
            return
        await part.low_watermark_moved(remaining)


def handle_describe_log_dirs(broker, ctx, req):
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
    results = []
    for d, topics in by_dir.items():
        st = os.statvfs(d)
        results.append(R.DescribeLogDirsResult(
            error_code=errors.NONE, log_dir=d,
            topics=[R.DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in topics.items()],
            total_bytes=st.f_blocks * st.f_frsize, usable_bytes=st.f_bavail * st.f_frsize))
    return R(error_code=errors.NONE, results=results)
