import pytest

from testkit.seaweedfs import seaweedfs


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real SeaweedFS S3 endpoint for the session (stopped at its end, also on failure)."""
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server
