"""The `josefk` command: a dispatcher that imports only the package of the subcommand it runs,
and errors that reach the user as one line, never a traceback (no broker needed: the failures
are the broker out of reach, a bad address, a missing keystore, a port in use, a closed pipe)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

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


def test_a_missing_keystore_is_one_line_naming_the_file(tmp_path):
    missing = tmp_path / "server.pem"
    p = josefk("broker", "--listeners", f"SSL://127.0.0.1:{closed_port()}",
               "--log-dirs", str(tmp_path / "data"),
               "--override", f"ssl.keystore.location={missing}")
    assert p.returncode == 1
    assert error_lines(p.stderr) == [
        f"josefk: listener SSL: cannot load TLS keys or certificates: ssl.keystore.location "
        f"{missing}: No such file or directory"]


def test_a_port_in_use_and_a_bad_config_are_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = josefk("broker", "--listeners", f"PLAINTEXT://127.0.0.1:{port}",
                   "--log-dirs", str(tmp_path / "data"))
    assert p.returncode == 1 and len(error_lines(p.stderr)) == 1, p.stderr
    assert "address already in use" in p.stderr
    for args in (["--override", "log.segment.bytes=big"], [str(tmp_path / "missing.properties")]):
        p = josefk("broker", "--log-dirs", str(tmp_path / "data"), *args)
        assert p.returncode in (1, 2) and len(error_lines(p.stderr)) == 1, p.stderr
