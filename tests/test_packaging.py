"""``pip install`` of josefk's built artifacts on a machine without a C compiler: ``python -m
build`` with ``JOSEFK_PURE=1`` makes the sdist and, from it, the ``py3-none-any`` wheel (no
compiler on PATH and CC failing, as on a user's machine); the wheel installs into fresh venvs of
CPython 3.11, 3.12 and 3.13 under the one ``josefk`` package, and there the ``josefk`` command
runs a broker that the console tools produce to and consume from, ``python -m josefk`` answers,
and the pytest plugin gives a user's test its broker and topic (docs/releasing.md)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from josefk.zk.local_server import free_port
from tests.testing.test_testing import processes_naming

REPO = Path(__file__).resolve().parents[1]
NOT_INSTALLED = ("tests", "compat_tests", "testkit", "bench", "scripts")
CPYTHONS = ["3.11", "3.12", "3.13"]  # the classifiers of pyproject.toml, each installed here


def _no_compiler(path: str) -> dict:
    """The environment of a machine whose PATH has no C compiler (and whose CC fails)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "JOSEFK_PURE_PYTHON")}
    env.update(PATH=path, CC="/bin/false", CXX="/bin/false", PIP_DISABLE_PIP_VERSION_CHECK="1")
    assert not any(shutil.which(cc, path=path) for cc in ("cc", "gcc", "clang"))
    return env


def _run(cmd, env, cwd, timeout=300, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, **kw)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
         {**_no_compiler(str(Path(sys.executable).parent)), "JOSEFK_PURE": "1"}, cwd=out)
    return out


def _python(version: str) -> str:
    """CPython ``version``: this one, else pyenv's (``pyenv install 3.13``), else on PATH."""
    if sys.version.startswith(version + "."):
        return sys.executable
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob(f"{version}.*/bin/python{version}")) or \
        [Path(p) for p in [shutil.which(f"python{version}")] if p]
    assert found, f"no CPython {version} (pyenv install {version}, or python{version} on PATH)"
    return str(found[-1])


def _venv(python: str, root: Path, *packages) -> tuple[Path, dict]:
    """A fresh venv of ``python`` with ``packages``: (its bin dir, its no-compiler env)."""
    _run([python, "-m", "venv", str(root)], _no_compiler(str(Path(python).parent)), cwd=root.parent)
    env = _no_compiler(str(root / "bin"))
    _run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", *packages], env, cwd=root,
         timeout=600)
    return root / "bin", env


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory):
    """A fresh venv of this CPython with the wheel, pytest and confluent-kafka: (its bin dir,
    its env)."""
    (wheel,) = dist.glob("*.whl")
    return _venv(sys.executable, tmp_path_factory.mktemp("venv") / "venv", str(wheel),
                 "pytest", "confluent-kafka")


@pytest.fixture(scope="module", params=CPYTHONS)
def installed_on(request, dist, installed, tmp_path_factory):
    """The wheel alone in a fresh venv of each CPython josefk declares (3.11's is
    ``installed``)."""
    if sys.version.startswith(request.param + "."):
        return installed
    (wheel,) = dist.glob("*.whl")
    return _venv(_python(request.param),
                 tmp_path_factory.mktemp(f"venv{request.param}") / "venv", str(wheel))


def test_the_wheel_is_pure_python_for_every_declared_cpython(dist):
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == "josefk-0.1.0-py3-none-any.whl"
    info = zipfile.ZipFile(wheel)
    tags = [line for line in info.read("josefk-0.1.0.dist-info/WHEEL").decode().splitlines()
            if line.startswith(("Tag:", "Root-Is-Purelib:"))]
    assert tags == ["Root-Is-Purelib: true", "Tag: py3-none-any"]
    meta = info.read("josefk-0.1.0.dist-info/METADATA").decode().splitlines()
    (requires,) = [line for line in meta if line.startswith("Requires-Python: ")]
    versions = sorted((int(m[1]), int(m[2])) for line in meta
                      if (m := re.fullmatch(r"Classifier: Programming Language :: Python :: "
                                            r"(\d+)\.(\d+)", line)))
    # the oldest declared version is the one Requires-Python names, and each is tested here
    assert requires == f"Requires-Python: >={versions[0][0]}.{versions[0][1]}"
    assert [f"{a}.{b}" for a, b in versions] == CPYTHONS


def test_the_wheel_holds_josefk_alone_without_native_code(dist):
    (wheel,) = dist.glob("josefk-0.1.0-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"josefk", "josefk-0.1.0.dist-info"}
    packages = {n.split("/")[1] for n in names if n.startswith("josefk/") and n.count("/") > 1}
    assert {"wire", "storage", "broker", "coordinator", "zk", "tools", "testing"} <= packages
    assert not packages & set(NOT_INSTALLED)
    assert not [n for n in names if n.endswith((".so", ".pyd"))]  # the extension did not build
    meta = zipfile.ZipFile(wheel).read("josefk-0.1.0.dist-info/METADATA").decode()
    for line in ("Requires-Python: >=3.11", "License-Expression: Apache-2.0",
                 "License-File: LICENSE", "Classifier: Framework :: Pytest",
                 "Description-Content-Type: text/markdown"):
        assert line in meta
    entry_points = zipfile.ZipFile(wheel).read("josefk-0.1.0.dist-info/entry_points.txt").decode()
    assert "[console_scripts]\njosefk = josefk.cli:main" in entry_points
    assert "[pytest11]\njosefk = josefk.testing.plugin" in entry_points


def test_the_sdist_holds_the_sources_and_the_native_helper(dist):
    (sdist,) = dist.glob("josefk-0.1.0.tar.gz")
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    assert {"wire/_recscan.c", "wire/_recscan_py.py", "setup.py", "pyproject.toml", "LICENSE",
            "README.md", "testing/plugin.py", "josefk/cli.py"} <= names
    assert not {n.split("/")[0] for n in names} & set(NOT_INSTALLED)


def _wait_listening(proc, bootstrap: str, timeout: float = 60) -> None:
    host, port = bootstrap.split(":")
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the broker did not listen on {bootstrap} (exit code {proc.poll()})")


def test_the_josefk_command_serves_produce_and_consume(installed_on, tmp_path, request):
    bin_dir, env = installed_on
    walk = _run([str(bin_dir / "python"), "-c",
                 "import sys, josefk.wire.recscan as r, josefk.broker; print(r.NATIVE, "
                 "josefk.broker.__file__, '%d.%d' % sys.version_info[:2])"],
                env, cwd=tmp_path).stdout.split()
    assert walk[0] == "False" and walk[1].startswith(str(bin_dir.parent))
    assert walk[2] == request.node.callspec.params["installed_on"]
    bootstrap = f"127.0.0.1:{free_port()}"
    log = open(tmp_path / "broker.log", "w")
    broker = subprocess.Popen([str(bin_dir / "josefk"), "broker", "--listeners",
                               f"PLAINTEXT://{bootstrap}", "--log-dirs", str(tmp_path / "data")],
                              env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_listening(broker, bootstrap)
        josefk = [str(bin_dir / "josefk")]
        _run(josefk + ["topics", "create", "--bootstrap-server", bootstrap, "--topic", "wheel",
                       "--partitions", "2"], env, tmp_path, timeout=60)
        _run(josefk + ["console-producer", "--bootstrap-server", bootstrap, "--topic", "wheel"],
             env, tmp_path, timeout=60, input="one\ntwo\nthree\n")
        out = _run([str(bin_dir / "python"), "-m", "josefk", "console-consumer",
                    "--bootstrap-server", bootstrap, "--topic", "wheel", "--from-beginning",
                    "--max-messages", "3", "--timeout-ms", "20000"], env, tmp_path, timeout=60)
        assert sorted(out.stdout.split()) == ["one", "three", "two"]
    finally:
        broker.send_signal(signal.SIGTERM)
        code = broker.wait(30)
        log.close()
    text = (tmp_path / "broker.log").read_text()
    assert code == 0, text
    assert "records are walked in plain Python" in text


def test_the_pytest_plugin_gives_a_user_test_its_broker_and_topic(installed, tmp_path):
    bin_dir, env = installed
    (tmp_path / "test_app.py").write_text(
        "from confluent_kafka import Consumer, Producer\n\n\n"
        "def test_round_trip(josefk_broker, josefk_topic):\n"
        "    p = Producer({'bootstrap.servers': josefk_broker.bootstrap_servers})\n"
        "    p.produce(josefk_topic, b'hello')\n"
        "    assert p.flush(10) == 0\n"
        "    c = Consumer({'bootstrap.servers': josefk_broker.bootstrap_servers,\n"
        "                  'group.id': 'app', 'auto.offset.reset': 'earliest'})\n"
        "    c.subscribe([josefk_topic])\n"
        "    msg = c.poll(15)\n"
        "    c.close()\n"
        "    assert msg.value() == b'hello'\n")
    out = _run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "test_app.py"], env, tmp_path, timeout=120)
    assert "1 passed" in out.stdout


CLUSTER = """
import os
import sys

import josefk.testing
from confluent_kafka import Consumer, Producer

with josefk.testing.cluster(brokers=2, topics={"wheel": 2}, root=sys.argv[1]) as c:
    c.kill(2)
    c.restart(2)
    broker = c.brokers[2].process.proc.pid
    environ = open(f"/proc/{broker}/environ", "rb").read().split(b"\\0")
    print(os.readlink(f"/proc/{broker}/cwd"), any(e.startswith(b"PYTHONPATH=") for e in environ))
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
    p.produce("wheel", b"from the wheel")
    assert p.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "wheel",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["wheel"])
    msg = consumer.poll(30)
    consumer.close()
    print(msg.value().decode())
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="a josefk cluster needs Java")
def test_a_cluster_from_the_wheel(installed, tmp_path):
    """ZooKeeper and broker processes started by the installed package: their modules come
    from the venv, as the test's own."""
    bin_dir, env = installed
    java_home = Path(shutil.which("java")).resolve().parents[1]
    out = _run([str(bin_dir / "python"), "-c", CLUSTER, str(tmp_path / "cluster")],
               {**env, "JAVA_HOME": str(java_home)}, tmp_path, timeout=180)
    # the brokers ran the venv's josefk from their own dirs, nothing of it on PYTHONPATH
    assert out.stdout.splitlines()[-2:] == [f"{tmp_path / 'cluster' / 'broker-2'} False",
                                            "from the wheel"]
    logs = "".join(p.read_text() for p in (tmp_path / "cluster").glob("broker-*/broker-*.log"))
    assert str(bin_dir.parent) in logs and str(REPO) not in logs  # the venv's josefk ran
    assert processes_naming(tmp_path) == []
