"""The layering of docs/ARCHITECTURE.md holds (pyproject.toml's import contracts), and an import
across a forbidden arrow fails the check."""
from __future__ import annotations

from testkit.layers import lint


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
