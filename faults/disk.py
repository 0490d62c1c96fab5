"""Small disks that can be filled: one size-limited tmpfs per broker log dir.

``SmallDisk(path, size_mb).mount()`` mounts a tmpfs of that size at ``path``; ``fill()`` takes
all its free space (a file of zeros, so the broker's next write fails with ENOSPC as on a full
disk), ``free()`` gives it back, ``unmount()`` removes the mount. Needs root; mounts of a run that
died without unmounting (its pid is gone) are removed by the next ``mount()``.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

SOURCE_PREFIX = "josefk-faults-"
FILL_NAME = "fill"


class DiskUnavailable(RuntimeError):
    """This machine (or user) cannot mount small disks; the message says why."""


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "disk faults need root (a tmpfs mount per broker log dir)"
    return None


def _mounts() -> list[tuple[str, str]]:
    """(source, mount point) of every mount of this mount namespace."""
    with open("/proc/self/mounts") as f:
        return [(fields[0], fields[1].replace("\\040", " "))
                for fields in (line.split() for line in f) if len(fields) > 1]


def _umount(point: str) -> None:
    if subprocess.run(["umount", point], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", point], capture_output=True)  # busy: detach it


def remove_stale() -> None:
    """Unmount the disks of runs whose process is gone."""
    for source, point in _mounts():
        if source.startswith(SOURCE_PREFIX):
            pid = source[len(SOURCE_PREFIX):]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                _umount(point)


class SmallDisk:
    def __init__(self, path, size_mb: int):
        self.path = Path(path)
        self.size_mb = size_mb
        self.mounted = False

    @property
    def fill_path(self) -> Path:
        return self.path / FILL_NAME

    def mount(self) -> "SmallDisk":
        reason = unavailable_reason()
        if reason:
            raise DiskUnavailable(reason)
        remove_stale()
        self.path.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=755",
                               f"{SOURCE_PREFIX}{os.getpid()}", str(self.path)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise DiskUnavailable(f"cannot mount a tmpfs at {self.path}: {proc.stderr.strip()}")
        self.mounted = True
        return self

    def unmount(self) -> None:
        if self.mounted:
            _umount(str(self.path))
            self.mounted = False

    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self) -> None:
        """Take every free byte (writes of zeros until ENOSPC)."""
        chunk = b"\0" * (1 << 20)
        with open(self.fill_path, "ab", buffering=0) as f:
            try:
                while f.write(chunk):  # a short write near the end, then ENOSPC
                    pass
            except OSError:
                pass

    def free(self) -> None:
        try:
            self.fill_path.unlink()
        except FileNotFoundError:
            pass
