"""The `josefk` command: a dispatcher that imports only the package of the subcommand it runs,
and errors that reach the user as one line, never a traceback, with the exit code of their kind
(2: bad usage or configuration, 1: a failure to run). No broker needed: the failures are the
broker out of reach, a bad address or value, a missing keystore, a port in use, a closed pipe."""
from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time

from josefk.wire.records import build_batch

JOSEFK = [sys.executable, "-m", "josefk"]
BROKER_INTERNALS = ("josefk.broker.app", "josefk.broker.server", "josefk.broker.handlers",
                    "josefk.broker.replication", "josefk.broker.control", "josefk.coordinator",
                    "josefk.storage", "josefk.zk.client")


def josefk(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*JOSEFK, *args], capture_output=True, text=True, timeout=60, **kw)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_lines(stderr: str) -> list[str]:
    """stderr without the broker's own log lines."""
    return [line for line in stderr.splitlines() if " INFO " not in line]


def test_a_tool_loads_no_broker_internals():
    code = ("import json, sys\nfrom josefk.cli import main\n"
            f"rc = main(['topics', 'list', '--bootstrap-server', '127.0.0.1:{closed_port()}'])\n"
            "print(json.dumps([rc, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    rc, modules = json.loads(out.stdout)
    assert rc == 1
    assert [m for m in modules if m.startswith(BROKER_INTERNALS)] == []


def test_help_lists_every_subcommand():
    out = josefk("--help").stdout
    for command in ("broker", "topics", "groups", "console-consumer", "dump-log", "cluster",
                    "registry", "rest"):
        assert command in out


def test_a_broker_out_of_reach_is_one_line_for_every_tool():
    bootstrap = f"127.0.0.1:{closed_port()}"
    for args in (["topics", "list"], ["groups", "list"], ["users", "describe"],
                 ["acls", "--list"], ["quotas", "describe"], ["transactions", "list"],
                 ["log-dirs", "--describe"], ["console", "--port", "0"],
                 ["console-consumer", "--topic", "t", "--timeout-ms", "1000"]):
        p = josefk(*args, "--bootstrap-server", bootstrap)
        assert p.returncode == 1 and len(error_lines(p.stderr)) == 1, (args, p.stderr)
        assert f"cannot connect to {bootstrap}" in p.stderr, (args, p.stderr)


def test_a_bad_bootstrap_address_is_named():
    p = josefk("topics", "list", "--bootstrap-server", "garbage")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[-1].endswith("Invalid url in bootstrap.servers: garbage")


def test_missing_client_properties_are_one_line(tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SSL\nssl.truststore.location={tmp_path}/ca.pem\n")
    for path in (props, tmp_path / "missing.properties"):
        p = josefk("acls", "--list", "--bootstrap-server", f"127.0.0.1:{closed_port()}",
                   "--command-config", str(path))
        assert p.returncode == 1 and len(error_lines(p.stderr)) == 1, p.stderr
    assert f"ssl.truststore.location {tmp_path}/ca.pem: No such file or directory" in p.stderr \
        or "missing.properties" in p.stderr


def test_dump_log_into_a_closed_pipe_stops_quietly(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(build_batch([(None, b"v" * 100, None, None)] * 5000))
    p = subprocess.Popen([*JOSEFK, "dump-log", "--files", str(seg), "--print-data-log"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()  # as `| head -1` does
    assert p.wait(60) == 1
    assert p.stderr.read() == b""


def test_dump_log_reads_a_remote_segment_from_the_object_store(tmp_path):
    """Tiered storage: ``--remote-storage-config`` (a broker's properties) makes the files
    object keys in the store its remote.log.storage.josefk.* settings name (here the local
    engine; compat_tests/storage/test_tiered.py reads one from SeaweedFS)."""
    from josefk.tiered.store import LocalStore

    store = LocalStore(tmp_path / "bucket")
    key = "t-0-AAAAAAAAAAAAAAAAAAAAAA/00000000000000000040-BBBBBBBBBBBBBBBBBBBBBB.log"
    store.put(key, build_batch([(None, b"v%d" % i, None, None) for i in range(3)],
                               base_offset=40))
    props = tmp_path / "server.properties"
    props.write_text(f"log.dirs={tmp_path}/data\nremote.log.storage.system.enable=true\n"
                     f"remote.log.storage.josefk.store=local\n"
                     f"remote.log.storage.josefk.local.dir={tmp_path}/bucket\n")
    p = josefk("dump-log", "--remote-storage-config", str(props), "--files", key,
               "--print-data-log")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[:2] == [f"Dumping {key}", "Log starting offset: 40"]
    assert lines[2].startswith("baseOffset: 40 lastOffset: 42 count: 3 ")
    assert [line.rsplit(" ", 1)[1] for line in lines[3:]] == ["v0", "v1", "v2"]
    p = josefk("dump-log", "--remote-storage-config", str(props), "--files", "t-0-A/missing.log")
    assert p.returncode == 1 and len(error_lines(p.stderr)) == 1, p.stderr
    props.write_text(f"log.dirs={tmp_path}/data\nremote.log.storage.josefk.store=ftp\n")
    p = josefk("dump-log", "--remote-storage-config", str(props), "--files", key)
    assert p.returncode == 1 and error_lines(p.stderr) == [
        "Error: remote.log.storage.josefk.store must be local or s3, not 'ftp'"], p.stderr


def test_a_missing_keystore_is_one_line_naming_the_file(tmp_path):
    missing = tmp_path / "server.pem"
    p = josefk("broker", "--listeners", f"SSL://127.0.0.1:{closed_port()}",
               "--log-dirs", str(tmp_path / "data"),
               "--override", f"ssl.keystore.location={missing}")
    assert p.returncode == 2
    assert error_lines(p.stderr) == [
        f"josefk broker: listener SSL: cannot load TLS keys or certificates: "
        f"ssl.keystore.location {missing}: No such file or directory"]


def test_a_port_in_use_is_one_line_and_exit_code_1_for_every_service(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        broker = josefk("broker", "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
                        "--log-dirs", str(tmp_path / "data"))
        services = {name: josefk(name, "--override", f"{bootstrap}=127.0.0.1:{closed_port()}",
                                 "--override", f"listeners=http://127.0.0.1:{port}")
                    for name, bootstrap in (("registry", "kafkastore.bootstrap.servers"),
                                            ("rest", "bootstrap.servers"))}
    assert broker.returncode == 1
    assert error_lines(broker.stderr) == [
        f"josefk broker: cannot start: Socket server failed to bind to 127.0.0.1:{port}: "
        "Address already in use."]
    for name, p in services.items():
        assert p.returncode == 1
        assert p.stderr.splitlines() == [
            f"josefk {name}: cannot listen on http://127.0.0.1:{port}: Address already in use"]


def test_a_broker_whose_registry_cannot_start_does_not_start(tmp_path):
    """``--with-registry`` on a port in use: the registry's one line, and the broker stops with
    it (no broker left running without its registry)."""
    kafka = closed_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = josefk("broker", "--listeners", f"PLAINTEXT://127.0.0.1:{kafka}",
                   "--log-dirs", str(tmp_path / "data"), "--with-registry", str(port))
    assert p.returncode == 1
    assert error_lines(p.stderr) == [
        f"josefk registry: cannot listen on http://127.0.0.1:{port}: Address already in use"]
    assert "josefk broker started" not in p.stderr


def test_bad_values_are_kafkas_words_and_exit_code_2(tmp_path):
    data = str(tmp_path / "data")
    for args, line in (
            (["--override", "log.retention.ms=abc"],
             "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"),
            (["--node-id", "2147483648"],
             "Invalid value 2147483648 for configuration node.id: Not a number of type INT"),
            (["--override", "auto.create.topics.enable=yes"],
             "Invalid value yes for configuration auto.create.topics.enable: Expected value to "
             "be either true or false"),
            ([str(tmp_path / "missing.properties")],
             f"No such file or directory: {tmp_path / 'missing.properties'}")):
        p = josefk("broker", "--log-dirs", data, *args)
        assert p.returncode == 2, (args, p.stderr)
        assert error_lines(p.stderr) == [f"josefk broker: {line}"], p.stderr
    for name, bootstrap in (("registry", "kafkastore.bootstrap.servers"),
                            ("rest", "bootstrap.servers")):
        p = josefk(name, "--override", "request.max.bytes=lots")
        assert p.returncode == 2
        assert p.stderr.splitlines() == [
            f'josefk {name}: Missing required configuration "{bootstrap}" which has no '
            "default value."]
        p = josefk(name, "--override", f"{bootstrap}=127.0.0.1:{closed_port()}",
                   "--override", "request.max.bytes=lots")
        assert p.returncode == 2
        assert p.stderr.splitlines() == [
            f"josefk {name}: Invalid value lots for configuration request.max.bytes: Not a "
            "number of type INT"]


def test_a_log_dir_that_cannot_be_made_is_exit_code_1(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    p = josefk("broker", "--listeners", f"PLAINTEXT://127.0.0.1:{closed_port()}",
               "--log-dirs", str(tmp_path / "file" / "data"))
    assert p.returncode == 1
    assert error_lines(p.stderr) == [
        f"josefk broker: cannot start: Not a directory: {tmp_path / 'file' / 'data'}"]


def test_an_unknown_config_is_warned_about_as_kafka_does_and_the_broker_starts(tmp_path):
    port = closed_port()
    p = subprocess.Popen([*JOSEFK, "broker", "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
                          "--log-dirs", str(tmp_path / "data"), "--override",
                          "log.retension.ms=5", "--override", "num.network.threads=3"],
                         stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in p.stderr:  # bounded by the broker's start (or exit)
            lines.append(line.rstrip("\n"))
            if line.startswith("josefk broker started"):
                break
    finally:
        p.terminate()
        p.wait(30)
    assert lines[-1] == "josefk broker started", lines
    warnings = [line.split(": ", 1)[1] for line in lines if " WARNING " in line]
    assert warnings == [
        "The configuration 'log.retension.ms' was supplied but isn't a known config."]


def test_a_services_kafka_clients_log_each_cause_once_through_logging():
    """The registry's and REST proxy's confluent-kafka clients (their ``client_logging``):
    librdkafka's lines go to Python logging, not stderr, and a broker out of reach is one
    line however often the clients retry it."""
    from confluent_kafka import Consumer, Producer

    from josefk.httpd.config import client_logging

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    settings = client_logging("josefk.test.kafka")
    settings["logger"].addHandler(handler)
    try:
        conf = {"bootstrap.servers": f"127.0.0.1:{closed_port()}", **settings,
                "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 20}
        clients = [Producer(conf), Consumer({**conf, "group.id": "g"})]
        clients[1].subscribe(["t"])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            clients[0].poll(0.1)
            clients[1].poll(0.1)
        clients[1].close()
    finally:
        settings["logger"].removeHandler(handler)
    failures = [r.getMessage() for r in records if r.args[0] == "FAIL"]
    assert len(failures) == 1, failures  # two clients, dozens of reconnects, one cause
    assert "Connection refused" in failures[0]


def test_zookeeper_out_of_reach_is_one_line_and_exit_code_1(tmp_path):
    zk = closed_port()
    p = josefk("broker", "--listeners", f"PLAINTEXT://127.0.0.1:{closed_port()}",
               "--log-dirs", str(tmp_path / "data"), "--zookeeper-connect", f"127.0.0.1:{zk}",
               "--override", "zookeeper.connection.timeout.ms=2000")
    assert p.returncode == 1
    assert "Traceback" not in p.stderr
    assert [line for line in p.stderr.splitlines() if line.startswith("josefk")] == [
        f"josefk broker: cannot start: Timed out waiting for connection to ZooKeeper "
        f"127.0.0.1:{zk} within 2000 ms"]
