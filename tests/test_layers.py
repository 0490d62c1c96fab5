"""The layering of docs/ARCHITECTURE.md holds (pyproject.toml's import contracts), and an import
across a forbidden arrow fails the check."""
from __future__ import annotations

import tomllib

from testkit.layers import REPO, lint


def test_import_contracts_are_kept():
    result = lint()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_forbidden_import_fails_the_check():
    result = lint({"josefk/tools/_probe.py": "from josefk.broker.handlers import fetch\n",
                   "josefk/zk/_probe.py": "from josefk.broker.control import metadata\n"})
    assert result.returncode != 0
    assert "josefk.tools._probe -> josefk.broker.handlers.fetch" in result.stdout
    assert "josefk.zk._probe -> josefk.broker.control.metadata" in result.stdout


def test_the_tools_contract_names_every_module_of_the_broker_but_config_and_security():
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (clients,) = [c for c in contracts["contracts"] if "josefk.tools" in c.get("source_modules", ())
                  and "josefk.broker.app" in c.get("forbidden_modules", ())]
    forbidden = {m.rpartition(".")[2] for m in clients["forbidden_modules"]
                 if m.startswith("josefk.broker.")}
    modules = {p.stem if p.is_file() else p.name for p in (REPO / "broker").iterdir()
               if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert modules - forbidden == {"config", "security"}


def test_every_module_of_the_broker_has_its_layer():
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (rooms,) = [c for c in contracts["contracts"] if c.get("containers") == ["josefk.broker"]]
    assert rooms["exhaustive"] and not rooms.get("exhaustive_ignores")
    placed = {m.strip() for layer in rooms["layers"] for m in layer.replace(":", "|").split("|")}
    modules = {p.stem if p.is_file() else p.name for p in (REPO / "broker").iterdir()
               if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert modules == placed


def test_handlers_and_lower_rooms_cannot_reach_the_process_wiring():
    result = lint({"josefk/broker/handlers/_probe.py": "from josefk.broker import app\n",
                   "josefk/broker/share/_probe.py": "from josefk.broker import dynamic\n"})
    assert result.returncode != 0
    assert "josefk.broker.handlers._probe -> josefk.broker.app" in result.stdout
    assert "josefk.broker.share._probe -> josefk.broker.dynamic" in result.stdout
