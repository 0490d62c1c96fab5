"""The object-storage sink (Confluent's S3 sink settings) driven as the worker drives it:
connector start and task_configs, then a task with a small SinkTaskContext given put, pre_commit,
open and close, writing to a real SeaweedFS S3 server and to a local directory; and once end to
end, a josefk broker to SeaweedFS through the standalone worker. Every file is read back with
pyarrow, fastavro or json."""
from __future__ import annotations

import asyncio
import datetime
import decimal
import gzip
import io
import itertools
import json
import time
from importlib.metadata import entry_points

import fastavro
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from josefk.connect.api.connector import TopicPartition
from josefk.connect.api.errors import ConnectException, RetriableException
from josefk.connect.api.records import SinkRecord
from josefk.connect.api.schema import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from josefk.connect.connectors.object_store import S3SinkConnector, S3SinkTask
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.standalone import StandaloneHerder
from josefk.connect.runtime.worker_config import WorkerConfig
from josefk.tiered.store import LocalStore, S3Store, StoreError
from testkit.seaweedfs import seaweedfs

pytestmark = pytest.mark.timeout(120)

TOPIC = "orders"
TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
ORDER = (SchemaBuilder.struct().name("shop.Order")
         .field("id", Schema.INT64_SCHEMA)
         .field("customer", Schema.STRING_SCHEMA)
         .field("amount", Schema.OPTIONAL_FLOAT64_SCHEMA)
         .field("at", Timestamp.builder().optional().build())
         .build())
BASE_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z


class Context:
    """The worker's side of a sink task: its assignment, and the rewinds the task asks for."""

    def __init__(self, props, assignment=()):
        self.props = props
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeouts: list[int] = []
        self._assignment = set(assignment)

    def configs(self):
        return self.props

    def offset(self, offsets):
        self.rewinds.update(offsets)

    def timeout(self, timeout_ms):
        self.timeouts.append(timeout_ms)

    def assignment(self):
        return self._assignment

    def pause(self, *partitions):
        raise AssertionError("the sink never pauses")

    resume = pause

    def request_commit(self):
        raise AssertionError("the sink never requests a commit")

    def errant_record_reporter(self):
        return None


def order(offset, partition=0, customer=None, timestamp=None):
    value = (Struct(ORDER).put("id", offset).put("customer", customer or f"c{offset % 3}")
             .put("amount", offset * 1.5)
             .put("at", datetime.datetime.fromtimestamp(BASE_MS / 1000 + offset,
                                                        datetime.timezone.utc)))
    return SinkRecord(TOPIC, partition, Schema.STRING_SCHEMA, f"k{offset}", ORDER, value,
                      offset, BASE_MS + offset * 1000 if timestamp is None else timestamp,
                      "CreateTime")


def start_task(props, partitions=(TP0,)):
    connector = S3SinkConnector()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    task = S3SinkTask()
    context = Context(task_props, partitions)
    task.initialize(context)
    task.start(task_props)
    task.open(list(partitions))
    return task, context


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


_buckets = itertools.count()


@pytest.fixture
def bucket(s3):
    """A bucket of its own for each test."""
    name = f"sink-{next(_buckets)}"
    store = S3Store(name, endpoint=s3.endpoint, access_key=s3.access_key,
                    secret_key=s3.secret_key)
    store.ensure_bucket()
    return name, store


def s3_props(s3, bucket_name, **extra):
    props = {"connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": TOPIC,
             "s3.bucket.name": bucket_name, "store.url": s3.endpoint,
             "s3.region": s3.region, "aws.access.key.id": s3.access_key,
             "aws.secret.access.key": s3.secret_key, "flush.size": "3",
             "format.class": "io.confluent.connect.s3.format.json.JsonFormat"}
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def local_props(root, **extra):
    props = {"connector.class": "S3SinkConnector", "topics": TOPIC,
             "store.url": f"file://{root}", "flush.size": "3",
             "format.class": "io.confluent.connect.s3.format.json.JsonFormat"}
    props.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return props


def json_lines(store, key):
    return [json.loads(line) for line in store.get(key).decode().splitlines()]


# ---- formats, names and commits --------------------------------------------------------

def test_json_on_a_local_directory_named_by_offset_and_committed_only_once_uploaded(tmp_path):
    task, _ = start_task(local_props(tmp_path))
    task.put([order(i) for i in range(7)])
    store = LocalStore(tmp_path)
    assert store.list("") == ["topics/orders/partition=0/orders+0+0000000000.json",
                              "topics/orders/partition=0/orders+0+0000000003.json"]
    rows = json_lines(store, "topics/orders/partition=0/orders+0+0000000003.json")
    assert [r["id"] for r in rows] == [3, 4, 5]
    # as JsonConverter without schemas: a Timestamp is its milliseconds
    assert rows[0] == {"id": 3, "customer": "c0", "amount": 4.5, "at": BASE_MS + 3000}
    # offset 6 is buffered, not uploaded: the worker may commit up to it, not past it
    assert task.pre_commit({TP0: 7}) == {TP0: 6}
    task.put([order(7), order(8)])
    assert task.pre_commit({TP0: 9}) == {TP0: 9}
    task.close([TP0])
    task.stop()


def test_gzipped_json(tmp_path):
    task, _ = start_task(local_props(tmp_path, s3_compression_type="gzip",
                                     s3_compression_level=9))
    task.put([order(i) for i in range(3)])
    [key] = LocalStore(tmp_path).list("")
    assert key == "topics/orders/partition=0/orders+0+0000000000.json.gz"
    lines = gzip.decompress((tmp_path / key).read_bytes()).decode().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [0, 1, 2]


def test_schemaless_maps_as_json(tmp_path):
    task, _ = start_task(local_props(tmp_path, flush_size=2))
    records = [SinkRecord(TOPIC, 0, None, None, None, {"n": i, "tags": ["a", "b"],
                                                       "raw": b"\x01"}, i) for i in range(2)]
    task.put(records)
    rows = json_lines(LocalStore(tmp_path), "topics/orders/partition=0/orders+0+0000000000.json")
    assert rows == [{"n": 0, "tags": ["a", "b"], "raw": "AQ=="},
                    {"n": 1, "tags": ["a", "b"], "raw": "AQ=="}]


def test_parquet_on_seaweedfs_read_back_with_pyarrow(s3, bucket):
    name, store = bucket
    task, _ = start_task(s3_props(s3, name, flush_size=4,
                                  format_class="io.confluent.connect.s3.format.parquet."
                                               "ParquetFormat"), [TP0, TP1])
    task.put([order(i, partition=i % 2) for i in range(8)])
    keys = store.list("topics/")
    assert keys == ["topics/orders/partition=0/orders+0+0000000000.snappy.parquet",
                    "topics/orders/partition=1/orders+1+0000000001.snappy.parquet"]
    table = pq.read_table(io.BytesIO(store.get(keys[0])))
    assert table.column_names == ["id", "customer", "amount", "at"]
    assert table.column("id").to_pylist() == [0, 2, 4, 6]
    assert table.column("at").to_pylist()[0] == datetime.datetime.fromtimestamp(
        BASE_MS / 1000, datetime.timezone.utc)
    assert pq.ParquetFile(io.BytesIO(store.get(keys[0]))).metadata.row_group(0) \
        .column(0).compression == "SNAPPY"
    assert task.pre_commit({TP0: 7, TP1: 8}) == {TP0: 7, TP1: 8}


def test_parquet_without_compression_is_named_dot_parquet(tmp_path):
    task, _ = start_task(local_props(tmp_path, parquet_codec="none", format_class=(
        "io.confluent.connect.s3.format.parquet.ParquetFormat")))
    task.put([order(i) for i in range(3)])
    [key] = LocalStore(tmp_path).list("")
    assert key == "topics/orders/partition=0/orders+0+0000000000.parquet"
    assert pq.read_table(tmp_path / key).num_rows == 3


def test_avro_on_seaweedfs_read_back_with_fastavro(s3, bucket):
    name, store = bucket
    task, _ = start_task(s3_props(s3, name, avro_codec="deflate",
                                  format_class="io.confluent.connect.s3.format.avro.AvroFormat"))
    task.put([order(i) for i in range(3)])
    [key] = store.list("topics/")
    assert key == "topics/orders/partition=0/orders+0+0000000000.avro"
    reader = fastavro.reader(io.BytesIO(store.get(key)))
    assert reader.codec == "deflate"
    assert reader.writer_schema["name"] == "shop.Order"
    rows = list(reader)
    assert [r["id"] for r in rows] == [0, 1, 2]
    assert rows[1]["at"] == datetime.datetime.fromtimestamp(BASE_MS / 1000 + 1,
                                                            datetime.timezone.utc)


def nested_record(offset):
    address = (SchemaBuilder.struct().field("city", Schema.STRING_SCHEMA)
               .field("zip", Schema.OPTIONAL_STRING_SCHEMA).build())
    schema = (SchemaBuilder.struct().name("shop.Invoice")
              .field("id", Schema.INT32_SCHEMA)
              .field("price", Decimal.schema(2))
              .field("due", Date.builder().build())
              .field("lines", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
              .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA,
                                                 Schema.INT64_SCHEMA).build())
              .field("to", address)
              .field("note", Schema.OPTIONAL_BYTES_SCHEMA)
              .build())
    value = (Struct(schema).put("id", offset).put("price", decimal.Decimal("12.34"))
             .put("due", datetime.date(2024, 2, 29)).put("lines", ["a", "b"])
             .put("counts", {"x": 1}).put("to", Struct(address).put("city", "Oslo")))
    return SinkRecord(TOPIC, 0, None, None, schema, value, offset)


EXPECTED_NESTED = {"id": 0, "price": decimal.Decimal("12.34"), "due": datetime.date(2024, 2, 29),
                   "lines": ["a", "b"], "to": {"city": "Oslo", "zip": None}, "note": None}


def test_nested_schemas_in_parquet_and_avro(tmp_path):
    for fmt in ("ParquetFormat", "AvroFormat"):
        root = tmp_path / fmt
        task, _ = start_task(local_props(root, flush_size=1, format_class=fmt))
        task.put([nested_record(0)])
        [key] = LocalStore(root).list("")
        if fmt == "ParquetFormat":
            [row] = pq.read_table(root / key).to_pylist()
            assert row.pop("counts") == [("x", 1)]
        else:
            reader = fastavro.reader(open(root / key, "rb"))
            [row] = list(reader)
            assert row.pop("counts") == {"x": 1}
            assert reader.writer_schema["fields"][6]["type"] == ["null", "bytes"]
        assert row == EXPECTED_NESTED, fmt


def test_keys_and_headers_beside_the_values(tmp_path):
    task, _ = start_task(local_props(tmp_path, store_kafka_keys="true",
                                     store_kafka_headers="true", format_class="ParquetFormat",
                                     headers_format_class="JsonFormat"))
    records = [order(i) for i in range(3)]
    for r in records:
        r.headers.add("trace", f"t{r.kafka_offset}", Schema.STRING_SCHEMA).add("n", 7)
    task.put(records)
    base = tmp_path / "topics" / "orders" / "partition=0" / "orders+0+0000000000"
    assert sorted(p.name for p in base.parent.iterdir()) == [
        "orders+0+0000000000.headers.json", "orders+0+0000000000.keys.avro",
        "orders+0+0000000000.snappy.parquet"]
    assert [r for r in fastavro.reader(open(f"{base}.keys.avro", "rb"))] == ["k0", "k1", "k2"]
    headers = open(f"{base}.headers.json").read().splitlines()
    assert json.loads(headers[2]) == [{"key": "trace", "value": "t2"}, {"key": "n", "value": "7"}]


def test_a_new_schema_starts_a_new_file(tmp_path):
    task, _ = start_task(local_props(tmp_path, flush_size=10, format_class="AvroFormat"))
    v2 = SchemaBuilder.struct().name("shop.Order").field("id", Schema.INT64_SCHEMA).build()
    task.put([order(0), order(1), SinkRecord(TOPIC, 0, None, None, v2,
                                             Struct(v2).put("id", 2), 2)])
    [key] = LocalStore(tmp_path).list("")
    assert key.endswith("orders+0+0000000000.avro")
    assert [r["id"] for r in fastavro.reader(open(tmp_path / key, "rb"))] == [0, 1]
    assert task.pre_commit({TP0: 3}) == {TP0: 2}


# ---- rotation --------------------------------------------------------------------------

def test_rotation_by_record_time(tmp_path):
    task, _ = start_task(local_props(
        tmp_path, flush_size=100, rotate_interval_ms=10_000, partitioner_class="Hourly"
        "Partitioner", locale="en-US", timezone="UTC", timestamp_extractor="Record"))
    # one record a second: 0..9 in the first file, 10 opens the second
    task.put([order(i) for i in range(12)])
    [key] = LocalStore(tmp_path).list("")
    assert key == ("topics/orders/year=2023/month=11/day=14/hour=22/"
                   "orders+0+0000000000.json")
    assert [r["id"] for r in json_lines(LocalStore(tmp_path), key)] == list(range(10))
    assert task.pre_commit({TP0: 12}) == {TP0: 10}


def test_rotation_on_the_wall_clock_schedule(tmp_path):
    task, _ = start_task(local_props(tmp_path, flush_size=100,
                                     rotate_schedule_interval_ms=300, timezone="UTC"))
    task.put([order(0), order(1)])
    assert LocalStore(tmp_path).list("") == []
    assert task.pre_commit({TP0: 2}) == {TP0: 0}
    deadline = time.monotonic() + 5
    while task.pre_commit({TP0: 2}) != {TP0: 2} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert LocalStore(tmp_path).list("") == ["topics/orders/partition=0/orders+0+0000000000.json"]


def test_rotation_interval_is_ignored_without_a_time_based_partitioner(tmp_path):
    task, _ = start_task(local_props(tmp_path, flush_size=100, rotate_interval_ms=1))
    task.put([order(0)])
    time.sleep(0.01)
    task.put([order(1)])
    assert LocalStore(tmp_path).list("") == []
    assert task.pre_commit({TP0: 2}) == {TP0: 0}


def test_rotation_on_a_new_time_partition(tmp_path):
    task, _ = start_task(local_props(
        tmp_path, flush_size=100, rotate_interval_ms=60_000, partitioner_class=(
            "TimeBasedPartitioner"), path_format="'t'=HH-mm-ss", partition_duration_ms=5000,
        locale="en", timezone="UTC", timestamp_extractor="Record"))
    task.put([order(i) for i in range(12)])  # a record a second, a partition in five
    keys = LocalStore(tmp_path).list("")
    assert keys == ["topics/orders/t=22-13-20/orders+0+0000000000.json",
                    "topics/orders/t=22-13-25/orders+0+0000000005.json"]
    assert read_ids(LocalStore(tmp_path), keys) == list(range(10))
    assert task.pre_commit({TP0: 12}) == {TP0: 10}


# ---- restart ---------------------------------------------------------------------------

def read_ids(store, keys):
    return [r["id"] for key in keys for r in json_lines(store, key)]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_restart_rewinds_to_the_newest_file_without_duplicates_or_gaps(where, tmp_path,
                                                                       request):
    if where == "s3":
        s3 = request.getfixturevalue("s3")
        name, store = request.getfixturevalue("bucket")
        props = s3_props(s3, name)
    else:
        store, props = LocalStore(tmp_path), local_props(tmp_path)
    log = [order(i) for i in range(20)]
    first, _ = start_task(props)
    first.put(log[:8])  # files at 0, 3; 6-7 buffered
    committed = first.pre_commit({TP0: 8})[TP0]
    assert committed == 6
    first.put(log[8:11])  # file at 6 (6..8) uploaded, then the task dies before a commit
    first.stop()

    second, context = start_task(props)
    assert context.rewinds == {TP0: 6}  # the newest file is written again, not past it
    second.put(log[context.rewinds[TP0]:])
    assert second.pre_commit({TP0: 20}) == {TP0: 18}
    keys = store.list("topics/")
    assert [k.rsplit("+", 1)[1] for k in keys] == [
        f"{o:010d}.json" for o in (0, 3, 6, 9, 12, 15)]
    assert read_ids(store, keys) == list(range(18))


def test_restart_with_time_partitions_rewinds_across_their_directories(tmp_path):
    props = local_props(tmp_path, flush_size=100, rotate_interval_ms=3000,
                        partitioner_class="TimeBasedPartitioner", path_format="'m'=mm",
                        partition_duration_ms=60_000, locale="en", timezone="UTC",
                        timestamp_extractor="Record")
    log = [order(i) for i in range(60, 75)]  # 22:14:20 to 22:14:34, all in minute 14
    first, _ = start_task(props)
    first.put(log[:10])  # files at 60, 63, 66; 69 buffered
    first.stop()
    second, context = start_task(props)
    assert context.rewinds == {TP0: 66}
    second.put(log[66 - 60:])
    assert second.pre_commit({TP0: 75}) == {TP0: 72}
    keys = LocalStore(tmp_path).list("")
    assert read_ids(LocalStore(tmp_path), keys) == list(range(60, 72))


def test_restart_after_the_committed_offsets_were_lost_skips_what_is_uploaded(tmp_path):
    props = local_props(tmp_path)
    first, _ = start_task(props)
    first.put([order(i) for i in range(9)])
    first.stop()
    second, context = start_task(props)
    # the consumer would start at 0 again: the task rewinds it to the newest file
    assert context.rewinds == {TP0: 6}


def test_an_upload_that_fails_is_retried_with_the_same_records_and_no_duplicates(tmp_path):
    task, context = start_task(local_props(tmp_path, retry_backoff_ms=250))
    blocker = tmp_path / "topics" / "orders" / "partition=0"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the partition's folder goes")
    batch = [order(i) for i in range(5)]
    with pytest.raises(RetriableException, match="^cannot upload the files of orders-0 from "
                                                 "offset 0: cannot write topics/orders/"):
        task.put(batch)
    assert context.timeouts == [250]
    assert task.pre_commit({TP0: 5}) == {TP0: 0}
    blocker.unlink()
    task.put(batch)  # the worker's retry
    store = LocalStore(tmp_path)
    assert read_ids(store, store.list("topics/")) == [0, 1, 2]
    assert task.pre_commit({TP0: 5}) == {TP0: 3}  # 3 and 4 buffered once, not twice
    task.put([order(5)])
    keys = store.list("topics/")
    assert [k.rsplit("+", 1)[1] for k in keys] == ["0000000000.json", "0000000003.json"]
    assert read_ids(store, keys) == list(range(6))
    assert task.pre_commit({TP0: 6}) == {TP0: 6}


# ---- partitioners ----------------------------------------------------------------------

def test_field_partitioner(s3, bucket):
    name, store = bucket
    task, _ = start_task(s3_props(s3, name, flush_size=6, partitioner_class=(
        "io.confluent.connect.storage.partitioner.FieldPartitioner"),
        partition_field_name="customer"))
    task.put([order(i) for i in range(6)])
    keys = store.list("topics/")
    assert keys == ["topics/orders/customer=c0/orders+0+0000000000.json",
                    "topics/orders/customer=c1/orders+0+0000000001.json",
                    "topics/orders/customer=c2/orders+0+0000000002.json"]
    assert read_ids(store, keys) == [0, 3, 1, 4, 2, 5]
    assert task.pre_commit({TP0: 6}) == {TP0: 6}


def test_field_partitioner_without_the_field_fails_with_its_name(tmp_path):
    task, _ = start_task(local_props(tmp_path, partitioner_class="FieldPartitioner",
                                     partition_field_name="region"))
    with pytest.raises(ConnectException, match="partition.field.name 'region' is not a "
                                               "field of the value of record orders-0@0"):
        task.put([order(0)])


def test_time_based_partitioner_with_path_format_timezone_and_record_field(tmp_path):
    task, _ = start_task(local_props(
        tmp_path, flush_size=2, partitioner_class="TimeBasedPartitioner",
        path_format="'dt'=YYYY-MM-dd/'hr'=HH", partition_duration_ms=3_600_000,
        locale="en-US", timezone="Asia/Kolkata", timestamp_extractor="RecordField",
        timestamp_field="at"))
    # 22:13:20Z is 03:43:20 next day in Kolkata (+05:30); hours aligned on local time
    task.put([order(0, timestamp=0), order(1, timestamp=0)])
    assert LocalStore(tmp_path).list("") == [
        "topics/orders/dt=2023-11-15/hr=03/orders+0+0000000000.json"]


def test_time_based_partitioner_needs_its_settings(tmp_path):
    """Checked when the connector starts, with Confluent's messages."""
    with pytest.raises(ConnectException, match="path.format: Path format cannot be empty"):
        S3SinkConnector().start(local_props(
            tmp_path, partitioner_class="TimeBasedPartitioner", partition_duration_ms=1000,
            locale="en", timezone="UTC"))
    with pytest.raises(ConnectException, match="Mars/Olympus for configuration timezone: "
                                               "The datetime zone id is not recognised"):
        start_task(local_props(tmp_path, partitioner_class="TimeBasedPartitioner",
                               path_format="YYYY", partition_duration_ms=1000, locale="en",
                               timezone="Mars/Olympus"))


# ---- bad input and discovery -----------------------------------------------------------

def test_a_bucket_that_does_not_exist(s3):
    with pytest.raises(ConnectException, match="^Non-existent S3 bucket: no-such-bucket"):
        start_task(s3_props(s3, "no-such-bucket"))


def test_tombstones_fail_the_task_or_are_passed_over(tmp_path):
    tombstone = SinkRecord(TOPIC, 0, Schema.STRING_SCHEMA, "k1", ORDER, None, 1)
    task, _ = start_task(local_props(tmp_path / "fail"))
    with pytest.raises(ConnectException, match="Null valued records are not writeable with "
                                               "current behavior.on.null.values 'fail' "
                                               r"\(record orders-0@1\)"):
        task.put([order(0), tombstone])
    task, _ = start_task(local_props(tmp_path / "ignore", behavior_on_null_values="ignore"))
    task.put([order(0), tombstone, order(2), order(3)])
    keys = LocalStore(tmp_path / "ignore").list("")
    assert read_ids(LocalStore(tmp_path / "ignore"), keys) == [0, 2, 3]
    assert task.pre_commit({TP0: 4}) == {TP0: 4}


def test_parquet_needs_a_schema(tmp_path):
    task, _ = start_task(local_props(tmp_path, flush_size=1, format_class="ParquetFormat"))
    with pytest.raises(ConnectException, match="ParquetFormat needs records with a value "
                                               "schema: record orders-0@0 has none"):
        task.put([SinkRecord(TOPIC, 0, None, None, None, {"a": 1}, 0)])


def test_found_by_confluents_class_name():
    names = {ep.name: ep.value for ep in entry_points(group="josefk.connect.plugins")}
    assert names["io.confluent.connect.s3.S3SinkConnector"] == \
        "josefk.connect.connectors.object_store:S3SinkConnector"
    assert names["S3SinkConnector"] == names["io.confluent.connect.s3.S3SinkConnector"]
    assert "flush.size" in S3SinkConnector().config().keys


# ---- end to end: a josefk broker, the standalone worker, SeaweedFS ----------------------

ENVELOPE = {"type": "struct", "name": "shop.Order", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "customer", "type": "string", "optional": False}]}


def produce(josefk_broker, topic, ids):
    producer = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers})
    for i in ids:
        producer.produce(topic, value=json.dumps(
            {"schema": ENVELOPE, "payload": {"id": i, "customer": f"c{i % 3}"}}).encode())
    assert producer.flush(15) == 0


def parquet_ids(store):
    return [row for key in store.list("topics/")
            for row in pq.read_table(io.BytesIO(store.get(key))).column("id").to_pylist()]


def standalone(josefk_broker, tmp_path) -> StandaloneHerder:
    config = WorkerConfig({"bootstrap.servers": josefk_broker.bootstrap_servers,
                           "offset.storage.file.filename": str(tmp_path / "offsets"),
                           "offset.flush.interval.ms": "200",
                           "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                           "value.converter": "org.apache.kafka.connect.json.JsonConverter"},
                          distributed=False)
    config.worker_id = "127.0.0.1:8083"
    return StandaloneHerder(config, None, Plugins())


async def until(check, what, timeout=40.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_through_the_standalone_worker_every_record_once_across_a_restart(
        s3, bucket, josefk_broker, josefk_topic, tmp_path):
    name, store = bucket
    connector = {**s3_props(s3, name, flush_size=4, format_class="ParquetFormat"),
                 "name": "lake", "topics": josefk_topic}

    async def run(expected_ids):
        herder = standalone(josefk_broker, tmp_path)
        await herder.start([connector])
        try:
            async def done():
                return sorted(parquet_ids(store)) == expected_ids
            await until(done, f"ids {expected_ids}")
            status = await herder.connector_status("lake")
            assert [t["state"] for t in status["tasks"]] == ["RUNNING"], status
            await asyncio.sleep(0.6)  # a commit of the consumer offsets, then stop
        finally:
            await herder.stop()

    produce(josefk_broker, josefk_topic, range(10))
    asyncio.run(run(list(range(8))))  # 8 and 9 wait for flush.size
    produce(josefk_broker, josefk_topic, range(10, 16))
    asyncio.run(run(list(range(16))))
    assert parquet_ids(store) == list(range(16))  # every record once, in offset order
    assert [k.rsplit("/", 1)[1] for k in store.list("topics/")] == [
        f"{josefk_topic}+0+{o:010d}.snappy.parquet" for o in (0, 4, 8, 12)]


def test_a_missing_bucket_fails_the_task_with_its_cause_and_nothing_is_lost_once_made(
        s3, josefk_broker, josefk_topic, tmp_path):
    name = f"late-{next(_buckets)}"
    connector = {**s3_props(s3, name, flush_size=3, format_class="ParquetFormat"),
                 "name": "lake", "topics": josefk_topic}
    produce(josefk_broker, josefk_topic, range(6))

    async def run():
        herder = standalone(josefk_broker, tmp_path)
        await herder.start([connector])
        try:
            async def failed():
                status = await herder.connector_status("lake")
                tasks = status["tasks"]
                return tasks and tasks[0]["state"] == "FAILED" and tasks[0]
            task = await until(failed, "the task to fail")
            assert f"Non-existent S3 bucket: {name}" in task["trace"]
            assert (await herder.connector_status("lake"))["connector"]["state"] == "RUNNING"
            store = S3Store(name, endpoint=s3.endpoint, access_key=s3.access_key,
                            secret_key=s3.secret_key)
            store.ensure_bucket()
            await herder.restart_task("lake", 0)

            async def written():
                try:
                    return sorted(parquet_ids(store)) == list(range(6))
                except StoreError:  # SeaweedFS's filer may lag a bucket just made
                    return False
            await until(written, "every record in the bucket")
            assert [t["state"] for t in (await herder.connector_status("lake"))["tasks"]] \
                == ["RUNNING"]
        finally:
            await herder.stop()

    asyncio.run(run())
