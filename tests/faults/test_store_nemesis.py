"""The store-down nemesis (faults/nemesis.py) on a real SeaweedFS it stops and starts again,
reading the copy backlog from a broker's Prometheus endpoint (here a real HTTP server serving
what a broker would: the backlog grows while the store is down, the remote log after)."""
from __future__ import annotations

import random
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from josefk.faults import nemesis as nemesis_module
from josefk.faults.nemesis import Nemesis
from josefk.faults.objectstore import weed_binary
from testkit.seaweedfs import seaweedfs

pytestmark = pytest.mark.skipif(weed_binary() is None, reason="scripts/setup.sh test,tiered")
TOPIC = "faults-rf3"


class QuickRandom(random.Random):
    """Holds faults 1 s instead of 10-12 (a test double of the nemesis's rng)."""

    def uniform(self, a, b):
        return 1.0


def metrics_server(store, resumes: bool):
    """A Prometheus endpoint whose backlog grows while ``store`` is down and whose remote log
    grows once it is back (if ``resumes``)."""
    state = {"lag": 100, "size": 1000, "down_seen": False}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if store.process is None:
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
