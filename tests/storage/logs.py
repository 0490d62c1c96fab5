"""Helpers of the storage tests: a log config from keyword settings, batches to append, and the
records a log holds."""
from josefk.storage import LogConfig
from josefk.storage.log_validator import validate_records
from josefk.wire.batch import iter_headers
from josefk.wire.records import build_batch, iter_records


def cfg(**kw):
    return LogConfig.from_props({k.replace("_", "."): str(v) for k, v in kw.items()})


def mk(n=1, *, key=b"k", value=b"v" * 20, ts=1_000, codec=0, **kw):
    recs = [(key + str(i).encode() if key is not None else None, value, None, ts + i)
            for i in range(n)]
    return build_batch(recs, base_offset=12345, compression=codec, **kw)


def append(log, *batches, epoch=0, hwm=True, now_ms=None):
    """Append as a leader does: validated for the log's topic config, then written."""
    buf = bytearray(b"".join(batches))
    res = log.append(validate_records(buf, log.config, now_ms=now_ms), leader_epoch=epoch)
    if hwm:
        log.high_watermark = log.log_end_offset
    return res


def crash(log):
    """Leave the log as a killed process would: no flush, no marker, fds dropped."""
    for s in log._segments:
        s.close()
    log._closed = True


def records_of(data):
    out = []
    for h in iter_headers(data):
        out.extend(iter_records(data, h))
    return out


def all_records(log, start=None):
    out = []
    for h, b in log.iter_batches(start):
        out.extend(iter_records(b, h))
    return out


def read_everything(log, max_bytes=1 << 30):
    """Follow reads like a consumer: all records from the log start to the high watermark."""
    out = []
    off = log.log_start_offset
    while off < log.high_watermark:
        fd = log.read(off, max_bytes)
        recs = [r for r in records_of(fd.records) if r.offset >= off]
        if not recs:
            break
        out.extend(recs)
        off = recs[-1].offset + 1
    return out
