"""The record walk (produce validation, offset loading, request buffers): the native helper
``wire/_recscan.c`` where it was built at install, else its plain-Python twin
``wire/_recscan_py.py``, which gives the same results, only slower. ``JOSEFK_PURE_PYTHON=1``
chooses the plain-Python one (for the tests of both)."""
from __future__ import annotations

import os

if os.environ.get("JOSEFK_PURE_PYTHON") == "1":
    from josefk.wire._recscan_py import buffer, latest, scan
    NATIVE = False
else:
    try:
        from josefk.wire._recscan import buffer, latest, scan
        NATIVE = True
    except ImportError:
        from josefk.wire._recscan_py import buffer, latest, scan
        NATIVE = False

__all__ = ["NATIVE", "buffer", "latest", "scan"]
