"""The handlers called without sockets, on the harness of testkit/handlers.py."""
import pytest

from testkit.handlers import Services


@pytest.fixture
def services(tmp_path):
    s = Services(tmp_path)
    yield s
    s.close()
