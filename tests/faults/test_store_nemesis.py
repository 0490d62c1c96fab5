"""The object-store nemeses (faults/nemesis.py) on a real SeaweedFS: store-down stops and
starts it again, store-slow and store-errors act through the proxy in front of it, and
half-written / kill-mid-upload hold an upload there and kill its leader; each reads the copy
backlog from a broker's Prometheus endpoint (here a real HTTP server serving what a broker
would: the backlog grows while the store is faulty, the remote log after)."""
from __future__ import annotations

import random
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from josefk.faults import nemesis as nemesis_module
from josefk.faults.nemesis import Nemesis
from josefk.faults.objectstore import weed_binary
from josefk.faults.storeproxy import StoreProxy
from testkit.seaweedfs import seaweedfs

pytestmark = pytest.mark.skipif(weed_binary() is None, reason="scripts/setup.sh test,tiered")
TOPIC = "faults-rf3"


class QuickRandom(random.Random):
    """Holds faults 1 s instead of 10-12 (a test double of the nemesis's rng)."""

    def uniform(self, a, b):
        return 1.0


def metrics_server(store, resumes: bool, faulty=None):
    """A Prometheus endpoint whose backlog grows while ``store`` is down (or ``faulty()``)
    and whose remote log grows once it is back (if ``resumes``)."""
    state = {"lag": 100, "size": 1000, "down_seen": False}
    faulty = faulty or (lambda: store.process is None)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if faulty():
                state["lag"] += 50
                state["down_seen"] = True
            elif state["down_seen"] and resumes:
                state["size"] += 500
                state["lag"] = 0
            body = (f'kafka_server_brokertopicmetrics_remotecopylagbytes{{topic="{TOPIC}"}} '
                    f'{state["lag"]}.0\n'
                    f'kafka_server_brokertopicmetrics_remotelogsizebytes{{topic="{TOPIC}"}} '
                    f'{state["size"]}.0\n'
                    'kafka_server_brokertopicmetrics_remotecopylagbytes{topic="other"} 7.0\n')
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("resumes", [True, False])
def test_store_down_stops_the_store_and_checks_uploads_resume(tmp_path, monkeypatch, resumes):
    monkeypatch.setattr(nemesis_module, "RESUME_TIMEOUT", 2.0)
    with seaweedfs(tmp_path) as store:
        http = metrics_server(store, resumes)
        try:
            crashes = []
            n = Nemesis(SimpleNamespace(), QuickRandom(1), [], "g", store=store,
                        tiered_topic=TOPIC, metrics_ports={1: http.server_address[1]},
                        crashes=crashes)
            assert n.unavailable("store-down") is None
            assert n._remote() == (100.0, 1000.0)
            f = n.inject("store-down")
            assert f.kind == "store-down" and f.healed > f.injected
            urllib.request.urlopen(store.endpoint + "/josefk-ready-probe", timeout=5)  # back
            if resumes:
                assert crashes == [] and f.notes[0].startswith("uploads resumed")
                assert "RemoteCopyLagBytes 100 before" in f.notes[0] and "0 after" in f.notes[0]
                assert n._remote()[0] == 0  # the backlog fell
            else:
                assert len(crashes) == 1 and "did not resume" in crashes[0][1]
        finally:
            http.shutdown()
    assert Nemesis(SimpleNamespace(), random.Random(1), [], "g").unavailable("store-down")


@pytest.fixture(scope="module")
def running_store(tmp_path_factory):
    """One SeaweedFS for the nemeses that leave it running."""
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as store:
        yield store


@pytest.mark.parametrize("kind", ["store-slow", "store-errors"])
def test_a_slow_or_failing_store_through_the_proxy(running_store, monkeypatch, kind):
    monkeypatch.setattr(nemesis_module, "RESUME_TIMEOUT", 5.0)
    store = running_store
    proxy = StoreProxy(store.endpoint, random.Random(3))
    proxy.start()
    seen = []  # what a request met during the fault

    def faulty():
        return proxy.delay > 0 or proxy.error_share > 0

    def probe():
        started = time.monotonic()
        try:
            urllib.request.urlopen(proxy.endpoint + "/josefk-ready-probe", timeout=10)
            seen.append(time.monotonic() - started)
        except urllib.error.HTTPError as e:
            seen.append(e.code)

    http = metrics_server(store, True, faulty)
    try:
        crashes = []
        n = Nemesis(SimpleNamespace(), QuickRandom(1), [], "g", store=store,
                    tiered_topic=TOPIC, metrics_ports={1: http.server_address[1]},
                    crashes=crashes, proxy=proxy)
        assert n.unavailable(kind) is None
        client = threading.Timer(0.3, probe)
        client.start()
        f = n.inject(kind)
        client.join(15)
        assert f.kind == kind and crashes == [], f.notes
        assert "uploads resumed" in f.notes[-1]
        if kind == "store-slow":
            assert seen and seen[0] >= 1.0  # QuickRandom: 1 s a request
        else:
            assert seen and seen[0] in (500, 503)
            assert f.notes[0].endswith("requests answered an error")
        assert not faulty() and proxy.hold is None  # healed
    finally:
        http.shutdown()
        proxy.stop()
    assert Nemesis(SimpleNamespace(), random.Random(1), [], "g",
               store=SimpleNamespace()).unavailable("store-slow")


class Cluster:
    """A test double of LocalCluster: partition 0's leader is broker 2; killing it is
    noted, and its restart plays the new leader removing the half-written segment."""

    def __init__(self, bucket):
        self.bucket, self.events = bucket, []
        self.brokers = {1: None, 2: None, 3: None}

    def metadata_from(self, b=None, topics=None, timeout=5.0):
        p = SimpleNamespace(partition_index=0, leader_id=-1 if b == 2 else 2)
        return SimpleNamespace(topics=[SimpleNamespace(name=TOPIC, partitions=[p])])

    def kill(self, b):
        self.events.append(("kill", b))

    def restart(self, b):
        self.events.append(("restart", b))
        self.bucket.delete([k for k in self.bucket.list(f"{TOPIC}-0-") if ".log" in k])


def test_half_written_kills_the_uploading_leader_and_checks_the_segment_goes(running_store,
                                                                              monkeypatch):
    from josefk.tiered.store import S3Store

    monkeypatch.setattr(nemesis_module, "RESUME_TIMEOUT", 5.0)
    store = running_store
    proxy = StoreProxy(store.endpoint, random.Random(3))
    proxy.start()
    bucket = S3Store("tiered", endpoint=proxy.endpoint, access_key=store.access_key,
                     secret_key=store.secret_key)
    bucket.ensure_bucket()
    stem = f"{TOPIC}-0-AAAAAAAAAAAAAAAAAAAAAA/{7:020d}-BBBBBBBBBBBBBBBBBBBBBB"
    cluster = Cluster(bucket)
    uploads = []

    def upload():  # the leader's copy: its .log, then its .index (held, then dropped)
        bucket.put(stem + ".log", b"segment")
        try:
            urllib.request.urlopen(urllib.request.Request(
                f"{proxy.endpoint}/tiered/{stem}.index", data=b"i", method="PUT"),
                timeout=10)
        except OSError as e:
            uploads.append(e)

    http = metrics_server(store, True, lambda: proxy.hold is not None)
    try:
        crashes = []
        n = Nemesis(cluster, QuickRandom(1), [], "g", store=store, tiered_topic=TOPIC,
                    metrics_ports={1: http.server_address[1]}, crashes=crashes,
                    proxy=proxy, bucket=bucket)
        client = threading.Timer(0.3, upload)
        client.start()
        f = n.inject("half-written")
        client.join(15)
        assert crashes == [], f.notes
        assert f.target == f"broker 2 (leader of {TOPIC}-0, uploading {stem}.index)"
        assert cluster.events == [("kill", 2), ("restart", 2)]
        assert uploads and proxy.hold is None  # the held upload was dropped
        assert "half-written segment's" in f.notes[-1] and "removed" in f.notes[-1]
        assert bucket.list(f"{TOPIC}-0-") == []
    finally:
        http.shutdown()
        proxy.stop()
