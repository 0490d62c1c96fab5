"""The web console's Connect page over real HTTP at both ends: the console's own server (its
Handler, on the session's josefk broker) asks a real Connect REST server (josefk.connect.rest
over a dict-backed herder) for the connectors, their tasks (worker, trace), config, topics and
offsets, and carries out restart / pause / resume / stop / delete / task restart / offsets
reset after confirmation; Connect's refusals and an unreachable Connect show on the page; the
client's basic authentication (user:password in the URL) and its fail-over between workers."""
from __future__ import annotations

import argparse
import html
import re
import threading
from http.server import ThreadingHTTPServer

import httpx
import pytest

from josefk.httpd.client import split_credentials
from josefk.connect.rest.server import BASIC_AUTH_EXTENSION, RestServer, basic_auth_of
from josefk.tools.web_connect import ConnectClient, ConnectError, connect_client, connect_urls
from josefk.tools.web_console import ConsoleData, Handler
from testkit.connect_herder import SINK, SOURCE, DictHerder, Loop


@pytest.fixture
def loop():
    running = Loop()
    yield running
    running.close()


@pytest.fixture
def connect_server(loop):
    servers = []

    def start(herder, auth=None) -> str:
        server = RestServer(["http://127.0.0.1:0"], herder, auth=auth)
        servers.append(server)
        return loop.run(server.start())[0]
    yield start
    for server in servers:
        loop.run(server.stop())


@pytest.fixture
def herder():
    h = DictHerder("http://worker-7:8083")
    h.configs = {"files-in": {"connector.class": SOURCE, "tasks.max": "2", "file": "/in.txt",
                              "topic": "lines", "name": "files-in"},
                 "files-out": {"connector.class": SINK, "tasks.max": "1", "file": "/out.txt",
                               "topics": "lines", "name": "files-out"}}
    h.states = {"files-in": "RUNNING", "files-out": "RUNNING"}
    h.failed_tasks = {"files-in": {1}}
    h.topics = {"files-in": ["lines"]}
    h.offsets = {"files-in": [{"partition": {"filename": "/in.txt"},
                               "offset": {"position": 42}}]}
    return h


@pytest.fixture
def console(josefk_broker, connect_server, herder):
    """The console's URL, showing the Connect cluster at ``herder``'s REST server."""
    data = ConsoleData(josefk_broker.bootstrap_servers,
                       connect=ConnectClient([connect_server(herder)]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Handler,), {"data": data}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    data.cc.close()
    thread.join(5)


def text(r: httpx.Response) -> str:
    """The page's text, without its tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", r.text))


def act(console: str, path: str, **form) -> httpx.Response:
    """Post an action, check it asks for confirmation, confirm it; the page it leads to."""
    asked = httpx.post(console + path, data=form)
    assert asked.status_code == 200 and "id='confirm'" in asked.text, asked.text
    done = httpx.post(console + path, data={**form, "confirm": "yes"})
    assert done.status_code == 303, done.text
    return httpx.get(console + done.headers["Location"])


def last(herder: DictHerder, method: str) -> tuple:
    return [c for c in herder.calls if c[0] == method][-1]


def test_the_connectors_with_type_state_tasks_and_worker(console):
    r = httpx.get(console + "/connect")
    assert r.status_code == 200
    page = text(r)
    assert "files-in" in page and "files-out" in page
    assert "source" in page and "sink" in page and "RUNNING" in page
    assert "1/2" in page and "1 failed" in page  # files-in: one of its two tasks failed
    assert "http://worker-7:8083" in page and SOURCE in page
    assert "href='/connect/files-in'" in r.text and "href='/connect'" in r.text


def test_a_connectors_tasks_trace_config_topics_and_offsets(console):
    page = text(httpx.get(console + "/connect/files-in"))
    assert "ConnectException: boom" in page  # the failed task's trace
    assert "/in.txt" in page and "tasks.max" in page
    assert '"position": 42' in page and "lines" in page
    assert "action='/connect/files-in/tasks/1/restart'" in httpx.get(
        console + "/connect/files-in").text


def test_actions_through_the_rest_api(console, herder):
    assert "Pausing files-in" in text(act(console, "/connect/files-in/pause"))
    assert herder.states["files-in"] == "PAUSED"
    act(console, "/connect/files-in/resume")
    assert herder.states["files-in"] == "RUNNING"
    act(console, "/connect/files-in/restart", mode="failed")
    assert last(herder, "restart_connector") == ("restart_connector", "files-in", True, True)
    act(console, "/connect/files-in/restart", mode="connector")
    assert last(herder, "restart_connector") == ("restart_connector", "files-in", False,
                                                 False)
    act(console, "/connect/files-in/tasks/1/restart")
    assert herder.failed_tasks["files-in"] == set()
    act(console, "/connect/files-in/stop")
    assert herder.states["files-in"] == "STOPPED"
    page = text(act(console, "/connect/files-in/reset-offsets"))
    assert "Offsets of files-in reset" in page and "files-in" not in herder.offsets
    page = text(act(console, "/connect/files-out/delete"))
    assert "Deleted files-out" in page and "files-out" not in herder.configs


def test_connects_refusals_show_on_the_page(console, herder):
    r = httpx.post(console + "/connect/files-in/reset-offsets", data={"confirm": "yes"})
    assert "Connectors must be in the STOPPED state" in text(r)
    assert "Connector nope not found" in text(httpx.get(console + "/connect/nope"))
    assert "restart mode" in text(httpx.post(console + "/connect/files-in/restart",
                                             data={"mode": "everything"}))


def test_without_connect(josefk_broker):
    data = ConsoleData(josefk_broker.bootstrap_servers)
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Handler,), {"data": data}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert "--connect-url" in httpx.get(base + "/connect").text
        r = httpx.post(base + "/connect/x/stop", data={"confirm": "yes"})
        assert "no Kafka Connect cluster is configured" in text(r)
    finally:
        server.shutdown()
        server.server_close()
        data.cc.close()


def test_the_client_fails_over_and_authenticates(connect_server, herder, tmp_path):
    users = tmp_path / "users"
    users.write_text("admin: s3cret\n")
    jaas = tmp_path / "jaas.conf"
    jaas.write_text("KafkaConnect {\n org.apache.kafka.connect.rest.basic.auth.extension."
                    f"PropertyFileLoginModule required file=\"{users}\";\n}};\n")
    url = connect_server(herder, basic_auth_of({
        "rest.extension.classes": BASIC_AUTH_EXTENSION,
        "java.security.auth.login.config": str(jaas)}))
    with pytest.raises(ConnectError) as refused:
        ConnectClient([url]).get("/connectors")
    assert refused.value.status == 401
    authenticated = url.replace("http://", "http://admin:s3cret@")
    client = connect_client([["http://127.0.0.1:1", authenticated]])
    assert client.get("/connectors") == ["files-in", "files-out"]
    with pytest.raises(ConnectError, match="unreachable"):
        ConnectClient(["http://127.0.0.1:1"]).get("/")


def test_connect_url_options():
    assert connect_client([]) is None
    client = connect_client([connect_urls("http://a:8083,http://b:8083"),
                             connect_urls("http://u:p@c:8083/")])
    assert [split_credentials(u) for u in client.urls] == [
        ("http://a:8083", None), ("http://b:8083", None), ("http://c:8083", "Basic dTpw")]
    for bad in ("garbage", "ftp://x:1", " , ", "http://:8083"):
        with pytest.raises(argparse.ArgumentTypeError):
            connect_urls(bad)
