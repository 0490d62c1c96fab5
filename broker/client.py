"""A small blocking Kafka client built on our own wire codecs, for the CLI tools."""
from __future__ import annotations

import socket

from wire import headers
from wire.apis import API_VERSIONS
from wire.types import i32


class KafkaError(Exception):
    def __init__(self, code, message=None):
        super().__init__(f"error code {code}" + (f": {message}" if message else ""))
        self.code = code


class Client:
    def __init__(self, bootstrap: str, client_id: str = "josefk-cli", timeout: float = 30.0):
        host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
        self.sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
        self.client_id = client_id
        self.correlation_id = 0
        self.versions = {}
        resp = self._call(API_VERSIONS, 0, API_VERSIONS.Request())
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def version_for(self, api) -> int:
        lo, hi = self.versions.get(api.key, (None, None))
        if lo is None:
            raise KafkaError(35, f"broker does not support {api.name}")
        return min(hi, api.max_version)

    def request(self, api, **fields):
        return self._call(api, self.version_for(api), api.Request(**fields))

    def _call(self, api, version, req):
        self.correlation_id += 1
        out = bytearray()
        headers.write_request_header(
            out, headers.RequestHeader(api.key, version, self.correlation_id, self.client_id),
            api.request_header_version(version))
        body = b"".join(bytes(c) for c in req.encode(version, out))
        self.sock.sendall(i32.pack(len(body)) + body)
        size = i32.unpack(self._recv(4))[0]
        data = self._recv(size)
        corr, pos = headers.read_response_header(data, api.response_header_version(version))
        if corr != self.correlation_id:
            raise KafkaError(-1, f"correlation id {corr} != {self.correlation_id}")
        resp, _ = api.Response.decode(data, version, pos)
        return resp

    def _recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)

