"""The object store engines, each against what it stores to: a directory, a real SeaweedFS."""
import itertools

import pytest

from josefk.tiered.store import LocalStore, S3Store, StoreError

_buckets = itertools.count()


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    server = request.getfixturevalue("s3_server")
    s = S3Store(f"store-test-{next(_buckets)}", endpoint=server.endpoint,
                access_key=server.access_key, secret_key=server.secret_key, prefix="cluster-a")
    s.ensure_bucket()
    return s


def test_put_bytes_and_file_then_ranges(store, tmp_path):
    data = bytes(range(256)) * 40
    store.put("t-0/00000000000000000000.log", data)
    f = tmp_path / "seg.index"
    f.write_bytes(b"\x00\x01" * 100)
    store.put("t-0/00000000000000000000.index", f)
    assert store.get("t-0/00000000000000000000.log") == data
    assert store.get("t-0/00000000000000000000.log", 1000, 1300) == data[1000:1300]
    assert store.get("t-0/00000000000000000000.log", 10000) == data[10000:]
    assert store.get("t-0/00000000000000000000.log", 5, 5) == b""
    assert store.get("t-0/00000000000000000000.index") == b"\x00\x01" * 100
    store.put("t-0/00000000000000000000.snapshot", b"")  # empty objects read back too
    assert store.get("t-0/00000000000000000000.snapshot") == b""


def test_list_by_string_prefix_and_delete(store):
    for key in ("t-0-a/1.log", "t-0-a/1.index", "t-1-a/1.log", "u-0-b/1.log"):
        store.put(key, b"x")
    assert store.list("t-0-") == ["t-0-a/1.index", "t-0-a/1.log"]
    assert store.list("t-") == ["t-0-a/1.index", "t-0-a/1.log", "t-1-a/1.log"]
    store.delete(["t-0-a/1.index", "t-0-a/1.log", "t-0-a/never-there"])
    assert store.list("t-0-") == []
    assert store.list("t-1-a/") == ["t-1-a/1.log"]


def test_list_sizes(store):
    store.put("t-0-a/1.log", b"xyz")
    store.put("t-0-a/1.index", b"")
    store.put("t-1-a/1.log", b"x")
    assert store.list_sizes("t-0-") == {"t-0-a/1.log": 3, "t-0-a/1.index": 0}
    assert store.list_sizes("v-") == {}


def test_missing_object_is_a_store_error(store):
    with pytest.raises(StoreError, match="cannot read"):
        store.get("nothing/here.log", 0, 10)


def test_local_keys_stay_inside_the_root(tmp_path):
    with pytest.raises(StoreError, match="outside the store"):
        LocalStore(tmp_path / "store").put("../escape", b"x")


def test_unreachable_endpoint_is_a_store_error():
    from josefk.zk.local_server import free_port

    s = S3Store("b", endpoint=f"http://127.0.0.1:{free_port()}", access_key="a",
                secret_key="b")
    with pytest.raises(StoreError):
        s.ensure_bucket()
