"""Fixtures shared by the unit tests."""
from __future__ import annotations

import pytest

from josefk.wire import _recscan_py, recscan
from testkit.postgres import pg_database, postgres  # noqa: F401  (fixtures)


@pytest.fixture(params=["native", "python"])
def record_walk(request, monkeypatch):
    """Run the test with the native record walk and again with its plain-Python twin (what a
    josefk installed without a C compiler uses)."""
    if request.param == "python":
        for name in ("scan", "latest", "buffer"):
            monkeypatch.setattr(recscan, name, getattr(_recscan_py, name))
    return request.param
