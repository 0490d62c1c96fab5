"""Two distributed workers (``josefk connect`` processes) on one josefk broker, driven through
the REST API with plain httpx: FileStreamSource and FileStreamSink created through a worker
that may not be the leader (forwarded), lines flow file -> topic -> file exactly; the worker
running the source task is killed with SIGKILL: its work moves to the survivor (after the
session timeout and scheduled.rebalance.max.delay.ms) and every line written after arrives."""
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import httpx
import pytest

STARTED = re.compile(r"josefk connect started on (\S+?)[ ,]")


def start_worker(tmp_path, bootstrap: str, group: str, n: int):
    props = tmp_path / f"worker-{n}.properties"
    props.write_text("\n".join(f"{k}={v}" for k, v in {
        "bootstrap.servers": bootstrap, "group.id": group, "listeners": "http://127.0.0.1:0",
        "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1, "offset.storage.partitions": 3,
        "status.storage.partitions": 2, "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500, "scheduled.rebalance.max.delay.ms": 1000,
        "offset.flush.interval.ms": 500,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"}.items()))
    log = open(tmp_path / f"worker-{n}.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "josefk", "connect", str(props)],
                            stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    match = STARTED.search(line + " ")
    if not match:
        proc.kill()
        log.seek(0)
        raise AssertionError(f"worker {n} did not start: {line!r} {log.read()[-3000:]}")
    return proc, match.group(1).rstrip("/")


def until(check, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.25)
    raise AssertionError("timed out")


def call(method, url, **kwargs):
    """A request answered 409 while the group rebalances is asked again, as clients do."""
    deadline = time.monotonic() + 60
    while True:
        r = httpx.request(method, url, timeout=30, **kwargs)
        if r.status_code != 409 or time.monotonic() > deadline:
            return r
        time.sleep(0.5)


@pytest.fixture
def workers(tmp_path, josefk_broker):
    group = f"connect-{uuid.uuid4().hex[:8]}"
    started = []
    try:
        for n in range(2):
            started.append(start_worker(tmp_path, josefk_broker.bootstrap_servers, group, n))
        yield started
    finally:
        for proc, _url in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


def test_file_to_topic_to_file_and_a_killed_worker_s_tasks_move(workers, josefk_topic,
                                                                 tmp_path):
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    first = [f"line-{i}" for i in range(50)]
    src.write_text("".join(f"{line}\n" for line in first))
    (_, url_a), (_, url_b) = workers
    created = call("POST", f"{url_b}/connectors", json={"name": "file-source", "config": {
        "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(src),
        "topic": josefk_topic}})
    assert created.status_code == 201, created.text
    created = call("POST", f"{url_a}/connectors", json={"name": "file-sink", "config": {
        "connector.class": "FileStreamSink", "tasks.max": "1", "file": str(out),
        "topics": josefk_topic}})
    assert created.status_code == 201, created.text

    until(lambda: out.exists() and out.read_text().splitlines() == first)
    assert sorted(call("GET", f"{url_a}/connectors").json()) == ["file-sink", "file-source"]

    def running_source():
        status = call("GET", f"{url_a}/connectors/file-source/status").json()
        tasks = status.get("tasks") or []
        return tasks and tasks[0]["state"] == "RUNNING" and tasks[0]["worker_id"]

    owner = until(running_source)
    victim = next(i for i, (_, url) in enumerate(workers) if url.endswith(owner))
    survivor_url = workers[1 - victim][1]
    time.sleep(1.5)  # an offset flush (offset.flush.interval.ms) after the lines above
    os.kill(workers[victim][0].pid, signal.SIGKILL)
    workers[victim][0].wait(10)

    later = [f"after-{i}" for i in range(50)]
    with src.open("a") as f:
        f.write("".join(f"{line}\n" for line in later))

    def survivor_runs_both():
        status = call("GET", f"{survivor_url}/connectors/file-source/status").json()
        tasks = status.get("tasks") or []
        return tasks and tasks[0]["state"] == "RUNNING" and tasks[0]["worker_id"] != owner

    until(survivor_runs_both, 90)
    # Every line arrives (a source restarted from its last committed offset may send again
    # the lines after it: at least once).
    until(lambda: set(out.read_text().splitlines()) == set(first + later), 90)
    lines = out.read_text().splitlines()
    assert lines[:50] == first


def test_health_initial_state_and_signed_internal_requests(workers, josefk_topic, tmp_path):
    """KIP-1017 health once started; KIP-980 a connector created STOPPED through either
    worker has no tasks until resumed; the internal task-configs request is refused by the
    leader without a valid KIP-507 signature (forwarded there by a follower)."""
    (_, url_a), (_, url_b) = workers
    for url in (url_a, url_b):
        until(lambda: httpx.get(f"{url}/health", timeout=30).status_code == 200)
        assert httpx.get(f"{url}/health", timeout=30).json()["status"] == "healthy"
    config = {"connector.class": "FileStreamSource", "tasks.max": "1",
              "file": str(tmp_path / "in.txt"), "topic": josefk_topic}
    r = call("POST", f"{url_b}/connectors", json={"name": "held", "config": config,
                                                  "initial_state": "STOPPED"})
    assert r.status_code == 201, r.text
    until(lambda: call("GET", f"{url_a}/connectors/held/status").json().get(
        "connector", {}).get("state") == "STOPPED")
    assert call("GET", f"{url_a}/connectors/held/tasks").json() == []
    r = call("POST", f"{url_a}/connectors", json={"name": "x", "config": config,
                                                  "initial_state": "SLEEPING"})
    assert r.status_code == 400 and r.json()["message"].endswith("InitialState.SLEEPING")

    body = b'[{"task.class": "anything"}]'
    for url in (url_a, url_b):
        r = call("POST", f"{url}/connectors/held/tasks", content=body, headers={
            "Content-Type": "application/json", "X-Connect-Authorization": "bm90IGl0",
            "X-Connect-Request-Signature-Algorithm": "HmacSHA256"})
        assert r.status_code == 403, r.text
        assert r.json()["message"] == "Internal request contained invalid signature."
        r = call("POST", f"{url}/connectors/held/tasks", content=body,
                 headers={"Content-Type": "application/json"})
        assert (r.status_code, r.json()["message"]) == (
            400, "Internal request missing required signature")
    assert call("GET", f"{url_b}/connectors/held/tasks").json() == []

    assert call("PUT", f"{url_b}/connectors/held/resume").status_code == 202
    until(lambda: len(call("GET", f"{url_a}/connectors/held/tasks").json()) == 1)
