"""The object-store proxy of the faults (faults/storeproxy.py) in front of a real SeaweedFS:
requests pass (through obstore, as the brokers' remote log manager makes them, and plain
HTTP), are delayed, answered S3's 500/503 errors, or held until dropped."""
from __future__ import annotations

import random
import threading
import time
import urllib.error
import urllib.request

import pytest

from josefk.faults.objectstore import weed_binary
from josefk.faults.storeproxy import StoreProxy
from testkit.seaweedfs import seaweedfs

pytestmark = pytest.mark.skipif(weed_binary() is None, reason="scripts/setup.sh test,tiered")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def proxy(store):
    p = StoreProxy(store.endpoint, random.Random(7))
    p.start()
    yield p
    p.stop()


def put(url: str, data: bytes, timeout: float = 10):
    return urllib.request.urlopen(urllib.request.Request(url, data=data, method="PUT"),
                                  timeout=timeout)


def test_requests_pass_one_a_connection(store, proxy):
    from josefk.tiered.store import S3Store

    s3 = S3Store("proxied", endpoint=proxy.endpoint, access_key=store.access_key,
                 secret_key=store.secret_key)
    s3.ensure_bucket()
    for i in range(5):  # the client's next request on a new connection each time
        s3.put(f"t-0/{i}.log", b"x" * 1000 + bytes([i]))
    assert s3.list("t-0/") == [f"t-0/{i}.log" for i in range(5)]
    assert s3.get("t-0/3.log", 998, 1001) == b"xx\x03"


def test_a_slow_store_answers_late(proxy):
    put(proxy.endpoint + "/slow", b"")
    proxy.delay = 0.5
    started = time.monotonic()
    put(proxy.endpoint + "/slow/k", b"v")
    assert time.monotonic() - started >= 0.5
    proxy.heal()
    started = time.monotonic()
    put(proxy.endpoint + "/slow/k", b"v")
    assert time.monotonic() - started < 0.5


def test_a_failing_store_answers_s3s_errors(proxy):
    proxy.error_share = 1.0
    seen = set()
    for _ in range(20):
        with pytest.raises(urllib.error.HTTPError) as e:
            put(proxy.endpoint + "/failing/k", b"v" * 100)
        seen.add((e.value.code, e.value.read().decode().split("<Code>")[1].split("<")[0]))
    assert seen == {(503, "SlowDown"), (500, "InternalError")}
    assert proxy.errors_answered == 20
    proxy.heal()
    put(proxy.endpoint + "/failing", b"")  # answered by the store again


def test_held_requests_wait_until_dropped(proxy):
    put(proxy.endpoint + "/held", b"")
    proxy.hold = lambda method, path: method == "PUT" and path.endswith(".index")
    put(proxy.endpoint + "/held/s.log", b"log")  # not held
    failed = []
    client = threading.Thread(target=lambda: _put_failing(proxy.endpoint + "/held/s.index",
                                                          failed))
    client.start()
    deadline = time.monotonic() + 10
    while not proxy.held and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proxy.held == [("PUT", "/held/s.index")]
    assert client.is_alive()  # kept waiting
    proxy.heal()
    client.join(10)
    assert failed and not client.is_alive()
    with pytest.raises(urllib.error.HTTPError) as e:  # it never reached the store
        urllib.request.urlopen(proxy.endpoint + "/held/s.index", timeout=10)
    assert e.value.code == 404


def _put_failing(url: str, failed: list) -> None:
    try:
        put(url, b"index")
    except (OSError, urllib.error.URLError) as e:
        failed.append(e)
