"""What pyproject.toml cannot say: the package layout and the one native helper.

In the repository each concern is a top-level folder (wire/, storage/, broker/, ...); installed,
they all live under one ``josefk`` package (josefk.wire, josefk.storage, ...), so a user's own
``storage`` or ``broker`` module never collides with ours. wire/_recscan.c walks records for
produce validation; it is optional: without a C compiler the install goes on and josefk walks
records in plain Python (wire/_recscan_py.py, the same results, slower).

``JOSEFK_PURE=1`` leaves the helper out altogether: ``JOSEFK_PURE=1 python -m build --wheel``
makes the ``py3-none-any`` wheel that installs on any CPython 3.11+ and any OS, with no
compiler (docs/releasing.md)."""
import os
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
TOP = ["wire", "storage", "coordinator", "zk", "tiered", "broker", "tools", "pipelines", "registry", "rest",
       "httpd", "connect", "mirror", "faults", "testing"]
TOP = [t for t in TOP if (HERE / t / "__init__.py").exists()]

setup(
    packages=["josefk"] + sorted(
        "josefk." + ".".join(init.parent.relative_to(HERE).parts)
        for top in TOP for init in (HERE / top).rglob("__init__.py")),
    package_dir={"josefk": "josefk", **{f"josefk.{top}": top for top in TOP}},
    package_data={"josefk.wire.apis": ["__init__.pyi"]},  # the APIs' types (wire/stubs.py)
    ext_modules=[] if os.environ.get("JOSEFK_PURE") == "1" else [
        Extension("josefk.wire._recscan", ["wire/_recscan.c"], extra_compile_args=["-O2"],
                  optional=True)],
)
