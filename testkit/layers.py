"""The import contracts of pyproject.toml (``[tool.importlinter]``, mirroring
docs/ARCHITECTURE.md), checked with import-linter: ``python -m testkit.layers``.

import-linter finds a package's modules on the file system, and josefk's packages are top-level
folders that setup.py maps to ``josefk.<x>``: the check runs on a mirror of the ``josefk``
namespace made of symlinks in a temporary directory, beside the test packages.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_PACKAGES = ("tests", "compat_tests", "testkit")


def _top_packages() -> list[str]:
    """setup.py's TOP list: the folders installed as ``josefk.<folder>``."""
    for node in ast.walk(ast.parse((REPO / "setup.py").read_text())):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "TOP" \
                and isinstance(node.value, ast.List):
            return [t for t in ast.literal_eval(node.value) if (REPO / t / "__init__.py").exists()]
    raise RuntimeError("setup.py has no TOP list")


def mirror(dest: Path) -> None:
    """``dest/josefk/<x>/...``: a symlink per Python file of the namespace, real directories."""
    sources = [(REPO / "josefk", dest / "josefk")]
    sources += [(REPO / top, dest / "josefk" / top) for top in _top_packages()]
    for src, dst in sources:
        for path in src.rglob("*.py"):
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    for name in TEST_PACKAGES:
        (dest / name).symlink_to(REPO / name)


def lint(extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run lint-imports on the mirror; ``extra`` adds modules to it ({"josefk/x/y.py": source})."""
    with tempfile.TemporaryDirectory(prefix="josefk-layers-") as tmp:
        mirror(Path(tmp))
        for name, source in (extra or {}).items():
            (Path(tmp) / name).write_text(source)
        lint_imports = Path(sys.executable).with_name("lint-imports")
        return subprocess.run([str(lint_imports), "--no-cache", "--no-logo",
                               str(REPO / "pyproject.toml")], cwd=tmp, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": tmp})


if __name__ == "__main__":
    result = lint()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.exit(result.returncode)
