"""Where remote segments live: ``ObjectStore``, four calls every engine answers, and its two
engines, a local directory (the zero-setup default) and any S3-compatible endpoint.

Keys are '/'-separated paths. Every call blocks: the remote log manager calls them from its
own threads, never from the event loop. An engine's failures are raised as `StoreError`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol


class StoreError(OSError):
    """The object store refused or failed a call (the caller retries later; a broker that
    cannot reach it at start reports it as any I/O failure)."""


class ObjectStore(Protocol):
    bucket: str  # what a read-replica topic names (the local engine: its directory)

    def put(self, key: str, data: bytes | Path) -> None:
        """Store ``data`` (bytes, or the contents of a file) under ``key``, whole or not at
        all."""

    def get(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of the object (``end`` None: to its end)."""

    def list(self, prefix: str) -> list[str]:
        """The keys that start with ``prefix``, sorted."""

    def delete(self, keys: list[str]) -> None:
        """Remove ``keys``; a key that is not there is no error."""

    def list_sizes(self, prefix: str) -> dict[str, int]:
        """`list` with each object's size in bytes."""


class LocalStore:
    """Objects as files under ``root`` (written to a temporary name, then renamed)."""

    def __init__(self, root):
        self.root = Path(root)
        self.bucket = str(self.root)  # what a read-replica topic names (an S3 store's bucket)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise StoreError(f"key {key!r} is outside the store")
        return path

    def put(self, key, data):
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            if isinstance(data, Path):
                with open(data, "rb") as src, open(tmp, "wb") as dst:
                    os.sendfile(dst.fileno(), src.fileno(), 0, os.fstat(src.fileno()).st_size)
            else:
                tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as e:
            raise StoreError(f"cannot write {key}: {e}") from e

    def get(self, key, start=0, end=None):
        try:
            with open(self._path(key), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                stop = size if end is None else min(end, size)
                return os.pread(f.fileno(), max(0, stop - start), start)
        except OSError as e:
            raise StoreError(f"cannot read {key}: {e}") from e

    def list(self, prefix):
        return sorted(self.list_sizes(prefix))

    def list_sizes(self, prefix):
        base = self._path(prefix.rsplit("/", 1)[0]) if "/" in prefix else self.root
        if not base.is_dir():
            return {}
        root = str(self.root.resolve()) + "/"
        try:
            found = {str(p)[len(root):]: p.stat().st_size for p in base.rglob("*")
                     if p.is_file() and not p.name.endswith(".part")}
        except OSError as e:
            raise StoreError(f"cannot list {prefix}: {e}") from e
        return {k: size for k, size in found.items() if k.startswith(prefix)}

    def delete(self, keys):
        for key in keys:
            try:
                self._path(key).unlink(missing_ok=True)
            except OSError as e:
                raise StoreError(f"cannot delete {key}: {e}") from e


class S3Store:
    """A bucket of an S3-compatible endpoint (AWS S3, SeaweedFS, MinIO...) through obstore
    (Rust's object_store). Measured against boto3 on the local SeaweedFS: 1 MiB ranged reads
    at 260 MB/s against 167 (3.9 ms a request against 6.0), 16 MiB uploads at 67 MB/s against
    97; reads are what a consumer waits on, uploads run in the background, and obstore brings
    no dependency tree. The bucket is made when missing (`ensure_bucket`)."""

    def __init__(self, bucket: str, *, endpoint: str | None = None, region: str = "us-east-1",
                 access_key: str | None = None, secret_key: str | None = None,
                 prefix: str = ""):
        from obstore.store import S3Store as _S3

        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        config = {"region": region}
        if endpoint:
            config["endpoint"] = endpoint
        if access_key:
            config["access_key_id"] = access_key
            config["secret_access_key"] = secret_key or ""
        client = {"allow_http": True} if endpoint and endpoint.startswith("http://") else {}
        self.bucket = bucket
        self._store = _S3(bucket, config=config, client_options=client,
                          virtual_hosted_style_request=False)
        self._endpoint = endpoint

    def ensure_bucket(self) -> None:
        """Make the bucket when the endpoint has none (a fresh SeaweedFS or MinIO): S3's
        CreateBucket, unsigned (obstore does not make buckets); a bucket that exists is only
        listed."""
        import obstore
        import urllib.error
        import urllib.request

        try:
            next(iter(obstore.list(self._store, chunk_size=1)), None)
            return
        except Exception as e:  # noqa: BLE001 - obstore raises its own error classes per cause
            missing = e
        if not self._endpoint:
            raise StoreError(f"cannot list bucket {self.bucket}: {missing}")
        req = urllib.request.Request(f"{self._endpoint.rstrip('/')}/{self.bucket}", method="PUT")
        try:
            urllib.request.urlopen(req, timeout=10)
        except urllib.error.HTTPError as e:
            if e.code != 409:  # BucketAlreadyOwnedByYou / BucketAlreadyExists
                raise StoreError(f"bucket {self.bucket} cannot be listed ({missing}) nor made "
                                 f"(HTTP {e.code})") from e
        except OSError as e:
            raise StoreError(f"cannot reach {self._endpoint}: {e}") from e

    def put(self, key, data):
        import obstore

        try:
            if isinstance(data, Path):
                with open(data, "rb") as f:
                    obstore.put(self._store, self.prefix + key, f)
            else:
                obstore.put(self._store, self.prefix + key, data)
        except Exception as e:  # obstore raises its own error classes per cause
            raise StoreError(f"cannot write {key}: {e}") from e

    def get(self, key, start=0, end=None):
        import obstore

        try:
            if end is None:  # no range from 0: a ranged GET of an empty object is a 416
                options = {"range": {"offset": start}} if start else None
                return bytes(obstore.get(self._store, self.prefix + key,
                                         options=options).bytes())
            if end <= start:
                return b""
            return bytes(obstore.get_range(self._store, self.prefix + key, start=start,
                                           end=end))
        except Exception as e:
            raise StoreError(f"cannot read {key}: {e}") from e

    def list(self, prefix):
        return sorted(self.list_sizes(prefix))

    def list_sizes(self, prefix):
        import obstore

        # object_store lists by whole path segments: list the folder, keep the string prefix
        folder = (self.prefix + prefix).rsplit("/", 1)[0] if "/" in self.prefix + prefix \
            else None
        try:
            out = {}
            for chunk in obstore.list(self._store, prefix=folder):
                out.update((m["path"][len(self.prefix):], m["size"]) for m in chunk)
            return {k: size for k, size in out.items() if k.startswith(prefix)}
        except Exception as e:
            raise StoreError(f"cannot list {prefix}: {e}") from e

    def delete(self, keys):
        import obstore

        if not keys:
            return
        try:
            obstore.delete(self._store, [self.prefix + k for k in keys])
        except FileNotFoundError:
            pass
        except Exception as e:
            raise StoreError(f"cannot delete {keys[0]}...: {e}") from e


def open_store(get, local_root) -> ObjectStore:
    """The object store the ``remote.log.storage.josefk.*`` settings name (``get(name)``: a
    setting's value, None or "" if unset; ``local_root``: the local engine's directory when
    ``local.dir`` is unset). An S3 bucket is neither checked nor made (`S3Store.ensure_bucket`).
    Raises ValueError on an unknown engine."""
    kind = get("remote.log.storage.josefk.store") or "local"
    if kind == "local":
        return LocalStore(get("remote.log.storage.josefk.local.dir") or local_root)
    if kind == "s3":
        p = "remote.log.storage.josefk.s3."
        return S3Store(get(p + "bucket"), endpoint=get(p + "endpoint") or None,
                       region=get(p + "region") or "us-east-1",
                       access_key=get(p + "access.key") or None,
                       secret_key=get(p + "secret.key") or None, prefix=get(p + "prefix") or "")
    raise ValueError(f"remote.log.storage.josefk.store must be local or s3, not {kind!r}")
