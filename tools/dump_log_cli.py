"""`josefk dump-log --files F [F...]`: print a segment's batches, records, control markers
(``.log``) or index entries (``.index``, ``.timeindex``), like kafka-dump-log.sh; with
``--remote-storage-config``, of a remote segment (tiered storage): the files are object keys in
the store a broker's configuration names."""
from __future__ import annotations

import sys
from pathlib import Path

from josefk.wire.batch import TIMESTAMP_TYPE_FLAG, CorruptRecord, crc_ok, iter_headers
from josefk.wire.records import CODEC_NAMES, CONTROL_COMMIT, iter_records, parse_control_record


def add_commands(sub):
    d = sub.add_parser("dump-log", help="print the contents of log segment and index files "
                                        "(like kafka-dump-log.sh)")
    d.add_argument("--files", nargs="+", required=True,
                   help=".log, .index, .timeindex or .snapshot files")
    d.add_argument("--print-data-log", action="store_true",
                   help="print every record with its key and value")
    d.add_argument("--deep-iteration", action="store_true",
                   help="iterate the records of each batch (implied by --print-data-log)")
    d.add_argument("--remote-storage-config", metavar="FILE",
                   help="a broker's properties: the files are object keys (e.g. "
                        "<topic>-<partition>-<topic id>/<offset>-<segment id>.log) in the "
                        "object store its remote.log.storage.josefk.* settings name")
    d.set_defaults(func=dump_log)


def dump_log(args) -> int:
    # storage's own readers of the index files (imported here: other tools never load storage)
    from josefk.storage.segment import offset_index_entries, time_index_entries

    try:
        read = _reader(args.remote_storage_config)
    except (OSError, ValueError) as e:  # ConfigError included
        print(f"Error: {e}", file=sys.stderr)
        return 1
    for name in args.files:
        path = Path(name)
        print(f"Dumping {path}")
        try:
            data = read(name)
            base = int(path.name.split(".")[0].split("-")[0])  # a remote segment's: <offset>-<id>
        except (OSError, ValueError) as e:
            print(f"Error: cannot read {path}: {e}", file=sys.stderr)
            return 1
        if path.suffix == ".index":
            for rel, position in zip(*offset_index_entries(data)):
                print(f"offset: {base + rel} position: {position}")
        elif path.suffix == ".timeindex":
            for ts, rel in zip(*time_index_entries(data)):
                print(f"timestamp: {ts} offset: {base + rel}")
        else:
            print(f"Log starting offset: {base}")
            _dump_batches(data, args.print_data_log or args.deep_iteration, args.print_data_log)
    return 0


def _reader(config_file):
    """How to read a file named on the command line: from the disk, or from the object store
    the broker configuration ``config_file`` names."""
    if config_file is None:
        return lambda name: Path(name).read_bytes()
    from josefk.broker.config import BrokerConfig
    from josefk.tiered.store import open_store

    cfg = BrokerConfig.load(config_file)
    store = open_store(cfg.get, Path(cfg.log_dirs[0]).parent / "remote-storage")
    return store.get


def _dump_batches(data, deep: bool, payloads: bool) -> None:
    try:
        for h in iter_headers(data):
            ts_type = "LogAppendTime" if h.attributes & TIMESTAMP_TYPE_FLAG else "CreateTime"
            print(f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.count} "
                  f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
                  f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
                  f"partitionLeaderEpoch: {h.leader_epoch} "
                  f"isTransactional: {str(h.is_transactional).lower()} "
                  f"isControl: {str(h.is_control).lower()} position: {h.pos} "
                  f"{ts_type}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
                  f"compresscodec: {CODEC_NAMES.get(h.compression, h.compression)} "
                  f"crc: {h.crc & 0xFFFFFFFF} isvalid: {str(crc_ok(data, h)).lower()}")
            if deep:
                for r in iter_records(data, h):
                    print(_record_line(r, h, ts_type, payloads))
    except CorruptRecord as e:
        print(f"Found a corrupt batch: {e}")


def _record_line(r, h, ts_type, payloads) -> str:
    line = (f"| offset: {r.offset} {ts_type}: {r.timestamp} "
            f"keySize: {-1 if r.key is None else len(r.key)} "
            f"valueSize: {-1 if r.value is None else len(r.value)} "
            f"sequence: {h.base_sequence + r.offset - h.base_offset if h.base_sequence >= 0 else -1} "
            f"headerKeys: [{','.join(k for k, _ in r.headers)}]")
    if h.is_control:
        kind, epoch = parse_control_record(r)
        marker = "COMMIT" if kind == CONTROL_COMMIT else "ABORT"
        return f"{line} endTxnMarker: {marker} coordinatorEpoch: {epoch}"
    if payloads:
        line += f" key: {_text(r.key)} payload: {_text(r.value)}"
    return line


def _text(b) -> str:
    return "null" if b is None else bytes(b).decode("utf-8", "replace")
