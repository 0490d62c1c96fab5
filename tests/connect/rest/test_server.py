"""Connect's REST API served by the real aiohttp server over real HTTP (httpx), against a
dict-backed Herder (testkit/connect_herder.py): every endpoint's status code and JSON shape,
Connect's error bodies, the request timeout, forwarding to the leader (one and two hops, the
Authorization header, no known leader, an unreachable leader), basic authentication with a JAAS
file, TLS listeners (trustme), log levels under Log4j's names and the settings read from a
worker's properties."""
from __future__ import annotations

import base64
import logging
import ssl

import httpx
import pytest

from josefk.broker.config import ConfigError
from josefk.connect.runtime.loggers import level_name
from josefk.connect.runtime.herder import RequestSignature
from josefk.connect.rest.resources import SETTINGS
from josefk.httpd.server import ServiceError
from josefk.connect.rest.server import (BASIC_AUTH_EXTENSION, NO_LEADER, TOO_MANY_HOPS,
                                        RestServer, basic_auth_of, ssl_settings_of)
from testkit.connect_herder import CONVERTERS, PLUGINS, SINK, SOURCE, DictHerder, Loop

FILE_SOURCE = {"connector.class": SOURCE, "tasks.max": "1", "file": "/tmp/in.txt",
               "topic": "connect-test"}


@pytest.fixture
def serve():
    """serve(herder, listeners=..., **RestServer options) -> the first bound URL."""
    loop, servers = Loop(), []

    def start(herder, listeners=("http://127.0.0.1:0",), **options):
        server = RestServer(list(listeners), herder, **options)
        urls = loop.run(server.start())
        servers.append(server)
        return urls[0]
    yield start
    for server in servers:
        loop.run(server.stop())
    loop.close()


@pytest.fixture
def herder():
    return DictHerder()


@pytest.fixture
def api(serve, herder):
    with httpx.Client(base_url=serve(herder), timeout=10) as client:
        yield client


def created(api, name="local-file-source", config=None):
    r = api.post("/connectors", json={"name": name, "config": config or dict(FILE_SOURCE)})
    assert r.status_code == 201, r.text
    return r.json()


def error(r, status: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error_code"] == status
    return body["message"]


# -- the worker ----------------------------------------------------------------------------------
def test_root_names_the_version_and_the_kafka_cluster(api):
    body = api.get("/").json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}
    assert body["kafka_cluster_id"] == "cluster-a" and body["version"]


def test_health_is_kip_1017s_body(api):
    r = api.get("/health")
    assert r.status_code == 200
    assert r.json() == {"status": "healthy", "message": "Worker has completed startup and is "
                                                        "ready to handle requests."}


def test_health_of_a_herder_that_does_not_answer(serve, herder):
    herder.delay = 1.0
    r = httpx.get(serve(herder, request_timeout_s=0.2) + "/health")
    assert r.status_code == 500 and r.json()["status"] == "unhealthy"


def test_health_is_503_starting_until_the_herder_has_started(api, herder):
    herder.started = False
    r = api.get("/health")
    assert r.status_code == 503
    assert r.json() == {"status": "starting", "message": "Worker is still starting up."}
    herder.started = True
    assert api.get("/health").status_code == 200


def test_a_herder_slower_than_the_request_timeout_is_500_request_timed_out(serve, herder):
    herder.delay = 1.0
    r = httpx.get(serve(herder, request_timeout_s=0.2) + "/connectors")
    assert error(r, 500) == "Request timed out"


# -- connectors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("given, target", [("RUNNING", "STARTED"), ("paused", "PAUSED"),
                                           ("STOPPED", "STOPPED"), (None, None)])
def test_create_with_kip_980s_initial_state(api, herder, given, target):
    r = api.post("/connectors", json={"name": "c", "config": FILE_SOURCE,
                                      "initial_state": given})
    assert r.status_code == 201, r.text
    assert herder.initial_states == {"c": target}


def test_create_with_an_unknown_initial_state_is_400(api, herder):
    r = api.post("/connectors", json={"name": "c", "config": FILE_SOURCE,
                                      "initial_state": "running-ish"})
    assert error(r, 400) == ("No enum constant org.apache.kafka.connect.runtime.rest.entities."
                             "CreateConnectorRequest.InitialState.RUNNING-ISH")
    assert herder.configs == {}


def test_internal_task_configs_and_fencing_reach_the_herder_with_their_signature(api, herder):
    created(api, "c")
    body = b'[{"task.class": "T", "n": 1}]'
    headers = {"Content-Type": "application/json", "X-Connect-Authorization": "c2ln",
               "X-Connect-Request-Signature-Algorithm": "HmacSHA256"}
    r = api.post("/connectors/c/tasks", content=body, headers=headers)
    assert r.status_code == 204, r.text
    name, configs, signature = herder.calls[-1][1:]
    assert (name, configs) == ("c", [{"task.class": "T", "n": "1"}])
    assert signature == RequestSignature(body, "HmacSHA256", "c2ln")
    assert api.put("/connectors/c/fence").status_code == 204
    assert herder.calls[-1] == ("fence_zombies", "c", None)  # unsigned: the herder decides
    assert error(api.post("/connectors/c/tasks", json={"a": "b"}), 400) == \
        "Task configs must be a JSON array of objects"
    assert error(api.put("/connectors/nope/fence"), 404) == "Connector nope not found"


def test_forwarded_internal_requests_keep_their_signature(serve):
    leader, follower = DictHerder("http://leader:8083"), DictHerder("http://follower:8083")
    leader.configs["c"] = dict(FILE_SOURCE)
    follower.follow(serve(leader))
    body = b'[{"k": "v"}]'
    r = httpx.post(serve(follower) + "/connectors/c/tasks", content=body, headers={
        "Content-Type": "application/json", "X-Connect-Authorization": "c2ln",
        "X-Connect-Request-Signature-Algorithm": "HmacSHA256"})
    assert r.status_code == 204, r.text
    assert leader.calls[-1] == ("put_task_configs", "c", [{"k": "v"}],
                                RequestSignature(body, "HmacSHA256", "c2ln"))


def test_create_answers_201_with_the_info_and_its_location(api, herder):
    r = api.post("/connectors", json={"name": "local-file-source", "config": FILE_SOURCE})
    assert r.status_code == 201
    assert r.headers["Location"].endswith("/connectors/local-file-source")
    assert r.json() == {"name": "local-file-source",
                        "config": {**FILE_SOURCE, "name": "local-file-source"},
                        "tasks": [{"connector": "local-file-source", "task": 0}],
                        "type": "source"}
    assert herder.calls[-1] == ("put_connector_config", "local-file-source",
                                {**FILE_SOURCE, "name": "local-file-source"}, False)
    assert api.get("/connectors").json() == ["local-file-source"]
    assert api.get("/connectors/").json() == ["local-file-source"]


def test_create_takes_numbers_and_booleans_as_their_text_and_trims_the_name(api, herder):
    created(api, "  spaced  ", {"connector.class": SOURCE, "tasks.max": 2, "batch.size": 1.5,
                                "errors.log.enable": True})
    assert herder.configs["spaced"] == {"connector.class": SOURCE, "tasks.max": "2",
                                        "batch.size": "1.5", "errors.log.enable": "true",
                                        "name": "spaced"}


def test_create_refusals(api):
    created(api)
    assert error(api.post("/connectors", json={"name": "local-file-source",
                                               "config": FILE_SOURCE}), 409) == \
        "Connector local-file-source already exists"
    assert error(api.post("/connectors", json={"name": "a", "config": {**FILE_SOURCE,
                                                                        "name": "b"}}), 400) == \
        "Connector name configuration (b) doesn't match connector name in the URL (a)"
    assert "config" in error(api.post("/connectors", json={"name": "a"}), 400)
    # no name or an empty one reaches the herder as "", whose validation refuses it
    assert "String must be non-empty" in error(api.post("/connectors", json={
        "config": FILE_SOURCE}), 400)
    assert "String must be non-empty" in error(api.post("/connectors", json={
        "name": "   ", "config": FILE_SOURCE}), 400)
    assert error(api.post("/connectors", json=["not", "an", "object"]), 400)
    assert error(api.post("/connectors", json={"name": "a", "config": {"x": {"y": 1}}}), 400)
    assert error(api.post("/connectors", json={"name": "a", "config": {"x": None}}), 400) == \
        "Connector config: the value of 'x' must be a string"


def test_bodies_that_are_not_json(api):
    assert error(api.post("/connectors", content=b"{nope", headers={
        "Content-Type": "application/json"}), 400).startswith("Malformed JSON")
    assert error(api.post("/connectors", content=b"name=x", headers={
        "Content-Type": "application/x-www-form-urlencoded"}), 415) == \
        "HTTP 415 Unsupported Media Type"


def test_unknown_paths_and_wrong_methods(api):
    assert error(api.get("/nope"), 404) == "HTTP 404 Not Found"
    assert error(api.get("/connectors/a/tasks/x/status"), 404) == "HTTP 404 Not Found"
    r = api.delete("/connectors")
    assert error(r, 405) == "HTTP 405 Method Not Allowed"
    assert "POST" in r.headers["Allow"]


def test_expand_status_info_and_both(api, herder):
    created(api, "a")
    created(api, "b", {**FILE_SOURCE, "connector.class": SINK, "topics": "t"})
    status = api.get("/connectors", params={"expand": "status"}).json()
    assert set(status) == {"a", "b"} and set(status["a"]) == {"status"}
    assert status["b"]["status"]["type"] == "sink"
    assert status["a"]["status"]["connector"] == {"state": "RUNNING", "worker_id": herder.url}
    info = api.get("/connectors", params={"expand": "info"}).json()
    assert info["a"] == {"info": api.get("/connectors/a").json()}
    both = api.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(both["b"]) == {"status", "info"}
    assert api.get("/connectors", params={"expand": "bogus"}).json() == {"a": {}, "b": {}}


def test_info_config_status_tasks_of_a_connector(api, herder):
    assert api.get("/connectors/my%20connector").status_code == 404
    created(api, "my connector", {**FILE_SOURCE, "tasks.max": "2"})
    # a name percent-encoded in the path is the connector's name
    assert api.get("/connectors/my%20connector").json()["name"] == "my connector"
    assert api.get("/connectors/my connector/config").json()["tasks.max"] == "2"
    status = api.get("/connectors/my%20connector/status").json()
    assert [t["id"] for t in status["tasks"]] == [0, 1]
    tasks = api.get("/connectors/my%20connector/tasks").json()
    assert tasks[1]["id"] == {"connector": "my connector", "task": 1}
    herder.failed_tasks["my connector"] = {1}
    task = api.get("/connectors/my%20connector/tasks/1/status").json()
    assert task["state"] == "FAILED" and "boom" in task["trace"]
    assert error(api.get("/connectors/my%20connector/tasks/7/status"), 404) == \
        "No status found for task my connector-7"


def test_an_encoded_slash_in_a_name_is_not_a_path_separator(api):
    created(api, "a/b")
    assert api.get("/connectors").json() == ["a/b"]
    r = api.get("/connectors/a%2Fb")
    assert r.status_code == 200 and r.json()["name"] == "a/b"


def test_missing_connectors_are_404(api):
    for method, path in [("GET", "/connectors/x"), ("GET", "/connectors/x/config"),
                         ("GET", "/connectors/x/status"), ("GET", "/connectors/x/tasks"),
                         ("DELETE", "/connectors/x"), ("PUT", "/connectors/x/pause"),
                         ("PUT", "/connectors/x/resume"), ("PUT", "/connectors/x/stop"),
                         ("POST", "/connectors/x/restart"), ("GET", "/connectors/x/offsets"),
                         ("GET", "/connectors/x/topics")]:
        assert error(api.request(method, path), 404) == "Connector x not found", (method, path)


def test_put_config_creates_then_updates(api, herder):
    r = api.put("/connectors/c/config", json=FILE_SOURCE)
    assert r.status_code == 201 and r.headers["Location"].endswith("/connectors/c")
    assert set(r.json()) == {"name", "config", "tasks", "type"}
    r = api.put("/connectors/c/config", json={**FILE_SOURCE, "topic": "other", "name": "c"})
    assert r.status_code == 200 and r.json()["config"]["topic"] == "other"
    assert herder.calls[-1][3] is True  # allow_replace
    assert error(api.put("/connectors/c/config", json={**FILE_SOURCE, "name": "d"}), 400) == \
        "Connector name configuration (d) doesn't match connector name in the URL (c)"


def test_patch_config_merges_and_removes(api):
    created(api, "c")
    r = api.patch("/connectors/c/config", json={"topic": "t2", "file": None})
    assert r.status_code == 200
    config = r.json()["config"]
    assert config["topic"] == "t2" and "file" not in config
    assert error(api.patch("/connectors/c/config", json={"name": "z"}), 400).startswith(
        "Connector name configuration (z)")
    assert error(api.patch("/connectors/zz/config", json={"topic": "t"}), 404)
    assert error(api.patch("/connectors/c/config", json={"topic": ["t"]}), 400) == \
        "Connector config patch: the value of 'topic' must be a string or null"


def test_restart_pause_resume_stop_delete(api, herder):
    created(api, "c", {**FILE_SOURCE, "tasks.max": "3"})
    herder.failed_tasks["c"] = {2}
    r = api.post("/connectors/c/restart")
    assert r.status_code == 204 and r.content == b""
    assert herder.calls[-1] == ("restart_connector", "c", False, False)
    r = api.post("/connectors/c/restart", params={"includeTasks": "true", "onlyFailed": "true"})
    assert r.status_code == 202
    assert [t["state"] for t in r.json()["tasks"]] == ["RUNNING", "RUNNING", "RESTARTING"]
    assert herder.calls[-1] == ("restart_connector", "c", True, True)
    assert api.post("/connectors/c/tasks/2/restart").status_code == 204
    assert herder.failed_tasks["c"] == set()
    assert error(api.post("/connectors/c/tasks/9/restart"), 404) == "Task c-9 not found"
    assert api.put("/connectors/c/pause").status_code == 202
    assert api.get("/connectors/c/status").json()["connector"]["state"] == "PAUSED"
    assert api.put("/connectors/c/resume").status_code == 202
    assert api.put("/connectors/c/stop").status_code == 204
    assert herder.states["c"] == "STOPPED"
    assert api.delete("/connectors/c").status_code == 204
    assert api.get("/connectors").json() == []


def test_topics_and_their_reset(api, herder, serve):
    created(api, "c")
    herder.topics["c"] = ["connect-test"]
    assert api.get("/connectors/c/topics").json() == {"c": {"topics": ["connect-test"]}}
    assert api.put("/connectors/c/topics/reset").status_code == 202
    assert api.get("/connectors/c/topics").json() == {"c": {"topics": []}}
    off = serve(herder, topic_tracking=False)
    assert error(httpx.get(off + "/connectors/c/topics"), 403) == "Topic tracking is disabled."
    no_reset = serve(herder, topic_tracking_reset=False)
    assert error(httpx.put(no_reset + "/connectors/c/topics/reset"), 403) == \
        "Topic tracking reset is disabled."


def test_offsets_read_altered_and_reset(api, herder):
    created(api, "c")
    offsets = [{"partition": {"filename": "/tmp/in.txt"}, "offset": {"position": 30}}]
    assert error(api.patch("/connectors/c/offsets", json={"offsets": offsets}), 400) \
        .startswith("Connectors must be in the STOPPED state")
    api.put("/connectors/c/stop")
    r = api.patch("/connectors/c/offsets", json={"offsets": offsets})
    assert r.status_code == 200
    assert r.json() == {"message": "The offsets for this connector have been altered "
                                   "successfully"}
    assert api.get("/connectors/c/offsets").json() == {"offsets": offsets}
    for body in ({}, {"offsets": []}, {"offsets": None}):
        assert error(api.patch("/connectors/c/offsets", json=body), 400) == \
            "Partitions / offsets need to be provided for an alter offsets request"
    assert error(api.patch("/connectors/c/offsets", json={"offsets": [{"offset": {}}]}), 400)
    r = api.delete("/connectors/c/offsets")
    assert r.status_code == 200 and "reset successfully" in r.json()["message"]
    assert api.get("/connectors/c/offsets").json() == {"offsets": []}


def test_a_rebalance_is_409_with_the_herders_message(api, herder):
    herder.rebalancing = True
    assert error(api.put("/connectors/c/config", json=FILE_SOURCE), 409).startswith(
        "Cannot complete request momentarily due to stale configuration")


# -- plug-ins ------------------------------------------------------------------------------------
def test_connector_plugins(api, herder):
    assert api.get("/connector-plugins").json() == PLUGINS
    assert herder.calls[-1] == ("connector_plugins", True)
    assert api.get("/connector-plugins/", params={"connectorsOnly": "false"}).json() == \
        PLUGINS + CONVERTERS
    assert herder.calls[-1] == ("connector_plugins", False)
    config = api.get(f"/connector-plugins/{SOURCE}/config").json()
    assert config[0]["name"] == "file" and "documentation" in config[0]
    assert error(api.get("/connector-plugins/Nope/config"), 404) == "Unknown plugin Nope."


def test_validate(api, herder):
    r = api.put("/connector-plugins/FileStreamSourceConnector/config/validate",
                json={"connector.class": SOURCE, "topic": "t"})
    assert r.status_code == 200
    body = r.json()
    assert body["error_count"] == 1
    assert body["configs"][0]["value"]["errors"] == [
        "Missing required configuration \"file\" which has no default value."]
    # the short name, with or without "Connector", matches the class
    assert api.put("/connector-plugins/FileStreamSource/config/validate",
                   json={"connector.class": SOURCE}).status_code == 200
    assert error(api.put("/connector-plugins/FileStreamSink/config/validate",
                         json={"connector.class": SOURCE}), 400) == \
        f"Included connector type {SOURCE} does not match request type FileStreamSink"
    assert error(api.put("/connector-plugins/FileStreamSource/config/validate",
                         json={"topic": "t", "file": "f"}), 400) == \
        "Connector config {topic=t, file=f} contains no connector type"


# -- log levels ----------------------------------------------------------------------------------
@pytest.fixture
def test_loggers():
    names = ["josefk.test.rest", "josefk.test.rest.child", "josefk.test.other"]
    saved = {n: logging.getLogger(n).level for n in names}
    yield names
    for n, level in saved.items():
        logging.getLogger(n).setLevel(level)


def test_log4j_names_of_python_levels():
    assert [level_name(v) for v in (1, 5, 10, 20, 30, 40, 50, 60, 15)] == [
        "ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF", "INFO"]


def test_loggers_read_and_set(api, test_loggers):
    logging.getLogger("josefk.test.rest.child").setLevel(logging.WARNING)
    logging.getLogger("josefk.test.other")
    everything = api.get("/admin/loggers").json()
    assert everything["josefk.test.rest.child"] == {"level": "WARN", "last_modified": None}
    assert "root" in everything and "josefk.test.other" not in everything
    r = api.put("/admin/loggers/josefk.test.rest", json={"level": "debug"})
    assert r.status_code == 200
    assert r.json() == ["josefk.test.rest", "josefk.test.rest.child"]
    assert logging.getLogger("josefk.test.rest.child").level == logging.DEBUG
    level = api.get("/admin/loggers/josefk.test.rest.child").json()
    assert level["level"] == "DEBUG" and isinstance(level["last_modified"], int)
    assert api.get("/admin/loggers/josefk.test.other").json() == {
        "level": level_name(logging.getLogger("josefk.test.other").getEffectiveLevel()),
        "last_modified": None}
    assert api.put("/admin/loggers/josefk.test.other", json={"level": "OFF"}).json() == [
        "josefk.test.other"]
    assert api.get("/admin/loggers/josefk.test.other").json()["level"] == "OFF"


def test_cluster_scope_goes_to_the_herder_and_answers_204(api, herder, test_loggers):
    r = api.put("/admin/loggers/josefk.test.rest", params={"scope": "cluster"},
                json={"level": "error"})
    assert (r.status_code, r.content) == (204, b"")
    assert herder.calls[-1] == ("set_cluster_logger_level", "josefk.test.rest", "ERROR")
    assert logging.getLogger("josefk.test.rest").level == logging.ERROR


def test_logger_refusals(api):
    assert error(api.get("/admin/loggers/no.such.logger.anywhere"), 404) == \
        "Logger no.such.logger.anywhere not found."
    assert error(api.put("/admin/loggers/josefk.test.rest", json={}), 400) == \
        "Desired 'level' parameter was not specified in request."
    assert error(api.put("/admin/loggers/josefk.test.rest", json={"level": "LOUD"}), 404) == \
        "invalid log level 'LOUD'."
    assert error(api.put("/admin/loggers", json={"level": "INFO"}), 405)


# -- forwarding to the leader --------------------------------------------------------------------
def test_a_follower_forwards_to_the_leader(serve):
    leader, follower = DictHerder("http://leader:8083"), DictHerder("http://follower:8083")
    leader_url = serve(leader)
    follower.follow(leader_url)
    base = serve(follower)
    r = httpx.post(base + "/connectors", json={"name": "c", "config": FILE_SOURCE})
    assert r.status_code == 201 and r.json()["name"] == "c"
    assert r.headers["Location"] == base + "/connectors/c"
    assert "c" in leader.configs and not follower.configs
    r = httpx.put(base + "/connectors/c/config", json={**FILE_SOURCE, "topic": "t2"})
    assert r.status_code == 200 and leader.configs["c"]["topic"] == "t2"
    r = httpx.post(base + "/connectors/c/restart", params={"includeTasks": "true"})
    assert r.status_code == 202 and r.json()["connector"]["state"] == "RESTARTING"
    assert leader.calls[-1] == ("restart_connector", "c", True, False)
    # the leader's refusals come back as they are
    assert error(httpx.post(base + "/connectors", json={"name": "c", "config": FILE_SOURCE}),
                 409) == "Connector c already exists"
    assert httpx.delete(base + "/connectors/c").status_code == 204
    assert leader.configs == {}


def test_forwarding_stops_after_two_hops(serve):
    a, b = DictHerder("http://a"), DictHerder("http://b")
    a_url, b_url = serve(a), serve(b)
    a.follow(b_url)
    b.follow(a_url)  # each takes the other for the leader: a rebalance's confusion
    r = httpx.post(a_url + "/connectors", json={"name": "c", "config": FILE_SOURCE})
    assert error(r, 409) == TOO_MANY_HOPS
    assert [c[0] for c in a.calls] == ["put_connector_config"] * 2
    assert [c[0] for c in b.calls] == ["put_connector_config"]
    # a request that was forwarded once (forward=false) is never forwarded again
    assert error(httpx.delete(b_url + "/connectors/c", params={"forward": "false"}), 409) == \
        TOO_MANY_HOPS


def test_no_known_leader_is_409(api, herder):
    herder.follow(None)
    assert error(api.post("/connectors", json={"name": "c", "config": FILE_SOURCE}), 409) == \
        NO_LEADER


def test_an_unreachable_leader_is_500(api, herder):
    herder.follow("http://127.0.0.1:1")
    message = error(api.delete("/connectors/c"), 500)
    assert message.startswith("IO Error trying to forward REST request: ")


# -- basic authentication --------------------------------------------------------------------------
@pytest.fixture
def jaas(tmp_path):
    users = tmp_path / "users.properties"
    users.write_text("alice: secret\nbob: hunter2\n")
    path = tmp_path / "connect_jaas.conf"
    path.write_text("KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
                    f"PropertyFileLoginModule required\n  file=\"{users}\";\n}};\n")
    return str(path)


def _basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_basic_auth(serve, herder, jaas):
    auth = basic_auth_of({"rest.extension.classes": BASIC_AUTH_EXTENSION,
                          "java.security.auth.login.config": jaas})
    base = serve(herder, auth=auth)
    for headers in ({}, _basic("alice", "wrong"), _basic("mallory", "secret"),
                    {"Authorization": "Basic !!!"}):
        r = httpx.get(base + "/connectors", headers=headers)
        assert r.status_code == 401 and r.text == "User cannot access the resource."
    assert httpx.get(base + "/connectors", headers=_basic("alice", "secret")).json() == []
    # credentials come first: a form post without them is 401, not 415
    assert httpx.post(base + "/connectors", content=b"x=1", headers={
        "Content-Type": "application/x-www-form-urlencoded"}).status_code == 401


def test_basic_auth_from_kafka_opts(jaas, monkeypatch):
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1g -Djava.security.auth.login.config={jaas}")
    auth = basic_auth_of({"rest.extension.classes": BASIC_AUTH_EXTENSION})
    assert auth.verdict(_basic("bob", "hunter2")["Authorization"]) is None


def test_forwarding_carries_the_authorization_header(serve, jaas):
    auth = basic_auth_of({"rest.extension.classes": BASIC_AUTH_EXTENSION,
                          "java.security.auth.login.config": jaas})
    leader, follower = DictHerder(), DictHerder()
    follower.follow(serve(leader, auth=auth))
    base = serve(follower, auth=auth)
    r = httpx.post(base + "/connectors", json={"name": "c", "config": FILE_SOURCE},
                   headers=_basic("alice", "secret"))
    assert r.status_code == 201 and "c" in leader.configs


def test_basic_auth_settings_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    assert basic_auth_of({}) is None
    with pytest.raises(ConfigError, match="com.example.Other"):
        basic_auth_of({"rest.extension.classes": "com.example.Other"})
    with pytest.raises(ConfigError, match="JAAS"):
        basic_auth_of({"rest.extension.classes": BASIC_AUTH_EXTENSION})
    with pytest.raises(ConfigError, match="cannot read"):
        basic_auth_of({"rest.extension.classes": BASIC_AUTH_EXTENSION,
                       "java.security.auth.login.config": str(tmp_path / "none.conf")})


# -- TLS -----------------------------------------------------------------------------------------
@pytest.fixture
def tls(tmp_path):
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    keystore, truststore = tmp_path / "worker.pem", tmp_path / "ca.pem"
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(keystore))
    ca.cert_pem.write_to_path(str(truststore))
    return {"ssl.keystore.location": str(keystore), "ssl.truststore.location": str(truststore)}


def test_an_https_listener(serve, herder, tls):
    base = serve(herder, ["https://127.0.0.1:0"], ssl_settings=tls)
    assert base.startswith("https://127.0.0.1:")
    r = httpx.get(base + "/connectors", verify=ssl.create_default_context(
        cafile=tls["ssl.truststore.location"]))
    assert r.status_code == 200 and r.json() == []
    with pytest.raises(httpx.ConnectError):
        httpx.get(base + "/connectors")  # a client that does not trust the worker's CA


def test_forwarding_to_an_https_leader(serve, tls):
    leader, follower = DictHerder(), DictHerder()
    follower.follow(serve(leader, ["https://127.0.0.1:0"], ssl_settings=tls))
    base = serve(follower, ["http://127.0.0.1:0", "https://127.0.0.1:0"], ssl_settings=tls)
    r = httpx.post(base + "/connectors", json={"name": "c", "config": FILE_SOURCE})
    assert r.status_code == 201 and "c" in leader.configs


# -- the settings from a worker's properties -------------------------------------------------------
def test_ssl_settings_are_the_https_listeners_or_else_the_workers():
    worker = {"ssl.keystore.location": "/w.pem", "ssl.truststore.location": "/ca.pem",
              "bootstrap.servers": "b:9092"}
    assert ssl_settings_of(worker) == {"ssl.keystore.location": "/w.pem",
                                       "ssl.truststore.location": "/ca.pem"}
    prefixed = {**worker, "listeners.https.ssl.keystore.location": "/rest.pem"}
    assert ssl_settings_of(prefixed) == {"ssl.keystore.location": "/rest.pem"}


def test_from_worker_props(serve, herder, tls):
    server = RestServer.from_worker_props({"listeners": "http://127.0.0.1:0, https://127.0.0.1:0",
                                           "topic.tracking.enable": "false",
                                           **{f"listeners.https.{k}": v
                                              for k, v in tls.items()}}, herder)
    assert [s for s, _h, _p in server.listeners] == ["http", "https"]
    assert server.server_ssl is not None and not server.app[SETTINGS].topic_tracking
    assert RestServer.from_worker_props({}, herder).listeners == [("http", "", 8083)]
    assert RestServer.from_worker_props({"rest.host.name": "127.0.0.1", "rest.port": "8084"},
                                        herder).listeners == [("http", "127.0.0.1", 8084)]
    assert RestServer.from_worker_props({"rest.port": "8084", "listeners": "http://:9000"},
                                        herder).listeners == [("http", "", 9000)]


def test_bad_worker_props():
    for props, match in [({"listeners": "ftp://x:1"}, "listeners"),
                         ({"listeners": "http://x"}, "listeners"),
                         ({"listeners": "https://127.0.0.1:0"}, "ssl.keystore"),
                         ({"topic.tracking.enable": "maybe"}, "topic.tracking.enable")]:
        with pytest.raises(ConfigError, match=match):
            RestServer.from_worker_props(props, DictHerder())


def test_a_port_in_use_is_one_line(serve, herder):
    url = serve(herder)
    with pytest.raises(ServiceError, match="cannot listen on http://127.0.0.1:"):
        serve(herder, [url])


def test_cross_origin_requests_as_connect_allows_them(serve, herder):
    url = serve(herder, cors=("http://ui.example", "GET,PUT"))
    with httpx.Client(base_url=url, timeout=10) as api:
        r = api.get("/connectors", headers={"Origin": "http://ui.example"})
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Origin"] == "http://ui.example"
        assert r.headers["Access-Control-Allow-Credentials"] == "true"
        assert "Access-Control-Allow-Origin" not in api.get(
            "/connectors", headers={"Origin": "http://elsewhere"}).headers
        pre = api.options("/connectors", headers={"Origin": "http://ui.example",
                                                  "Access-Control-Request-Method": "PUT"})
        assert pre.status_code == 200
        assert pre.headers["Access-Control-Allow-Methods"] == "GET,PUT"
        denied = api.options("/connectors", headers={"Origin": "http://ui.example",
                                                     "Access-Control-Request-Method": "DELETE"})
        assert "Access-Control-Allow-Methods" not in denied.headers
    anyone = serve(herder, cors=("*", ""))
    r = httpx.options(anyone + "/connectors", headers={
        "Origin": "http://x.example", "Access-Control-Request-Method": "POST"})
    assert r.headers["Access-Control-Allow-Methods"] == "GET,POST,HEAD"
    assert "Access-Control-Allow-Origin" not in httpx.get(anyone + "/connectors").headers


def test_admin_listeners_serve_admin_alone_and_empty_turns_it_off(herder):
    loop = Loop()
    try:
        apart = RestServer.from_worker_props({"listeners": "http://127.0.0.1:0",
                                              "admin.listeners": "http://127.0.0.1:0"}, herder)
        [main] = loop.run(apart.start())
        [admin] = apart.admin_urls
        assert httpx.get(admin + "/admin/loggers").status_code == 200
        assert httpx.get(main + "/admin/loggers").status_code == 404
        assert httpx.get(main + "/connectors").status_code == 200
        assert httpx.get(admin + "/connectors").status_code == 404
        off = RestServer.from_worker_props({"listeners": "http://127.0.0.1:0",
                                            "admin.listeners": ""}, herder)
        [main] = loop.run(off.start())
        assert off.admin_urls == [] and httpx.get(main + "/admin/loggers").status_code == 404
        for server in (apart, off):
            loop.run(server.stop())
    finally:
        loop.close()
