"""A small blocking Kafka client built on our own wire codecs, for the CLI tools."""
from __future__ import annotations

import socket
from pathlib import Path

from josefk.broker.config import bootstrap_addresses, parse_properties
from josefk.broker.security.sasl import ClientExchange, client_credentials
from josefk.broker.security.listeners import SASL_PROTOCOLS, TLS_PROTOCOLS, client_ssl_context
from josefk.wire import headers
from josefk.wire.apis import (API_VERSIONS, OFFSET_COMMIT, OFFSET_FETCH, SASL_AUTHENTICATE,
                              SASL_HANDSHAKE)
from josefk.wire.types import i32

# The tools name topics by name: OffsetCommit/OffsetFetch v10 would need their ids
HIGHEST = {OFFSET_COMMIT.key: 9, OFFSET_FETCH.key: 9}


class KafkaError(Exception):
    def __init__(self, code, message=None):
        super().__init__(f"error code {code}" + (f": {message}" if message else ""))
        self.code = code


def command_config(args) -> dict:
    """The client settings of a CLI tool's ``--command-config`` file (none without one)."""
    path = getattr(args, "command_config", None)
    return parse_properties(Path(path).read_text()) if path else {}


class Client:
    """``props`` are Kafka client settings (``security.protocol``, ``ssl.truststore.location``,
    ``sasl.mechanism``, ``sasl.jaas.config``...), as in an admin tool's --command-config file."""

    def __init__(self, bootstrap: str, client_id: str = "josefk-cli", timeout: float = 30.0,
                 props: dict | None = None):
        self.props = props or {}
        self.protocol = self.props.get("security.protocol", "PLAINTEXT").upper()
        self.addresses = bootstrap_addresses(bootstrap)
        self.timeout = timeout
        self.client_id = client_id
        self.correlation_id = 0
        self.versions = {}
        self.sock = None
        self._connect()

    def _connect(self):
        """Connect to the first bootstrap address that answers, in the list's order, as Kafka's
        clients go through theirs."""
        failures = []
        for host, port in self.addresses:
            try:
                sock = socket.create_connection((host, port), timeout=self.timeout)
                break
            except OSError as e:
                failures.append(f"{host}:{port}: {e.strerror or e}")
        else:
            raise ConnectionError(f"cannot connect to {'; '.join(failures)}")
        if self.protocol in TLS_PROTOCOLS:
            sock = client_ssl_context(self.props.get).wrap_socket(sock, server_hostname=host)
        self.sock = sock
        if not self.versions:
            resp = self._call(API_VERSIONS, 0, API_VERSIONS.Request())
            self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        if self.protocol in SASL_PROTOCOLS:
            self._authenticate(self.props)

    @classmethod
    def from_args(cls, args) -> "Client":
        """A CLI tool's client: ``--bootstrap-server``, and ``--command-config`` for security."""
        return cls(args.bootstrap_server, props=command_config(args))

    def _authenticate(self, props):
        mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
        credentials = client_credentials(props)
        if credentials is None:
            raise KafkaError(-1, "SASL needs sasl.jaas.config with username and password")
        resp = self.request(SASL_HANDSHAKE, mechanism=mechanism)
        if resp.error_code:
            raise KafkaError(resp.error_code, f"mechanism {mechanism} not enabled (enabled: "
                             f"{', '.join(resp.mechanisms)})")
        exchange = ClientExchange(mechanism, *credentials)
        token = exchange.first()
        while token is not None:
            resp = self.request(SASL_AUTHENTICATE, auth_bytes=token)
            if resp.error_code:
                raise KafkaError(resp.error_code, resp.error_message)
            token = exchange.next(resp.auth_bytes)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def version_for(self, api) -> int:
        lo, hi = self.versions.get(api.key, (None, None))
        if lo is None:
            raise KafkaError(35, f"broker does not support {api.name}")
        return min(hi, api.max_version, HIGHEST.get(api.key, api.max_version))

    def request(self, api, **fields):
        return self._call(api, self.version_for(api), api.Request(**fields))

    def _call(self, api, version, req):
        """One request and its answer. A connection that failed, or was interrupted (Ctrl-C)
        between a request and its whole answer, is dropped, so that no later answer is read
        out of step; the next request connects again."""
        if self.sock is None:
            self._connect()
        self.correlation_id += 1
        out = bytearray()
        headers.write_request_header(
            out, headers.RequestHeader(api.key, version, self.correlation_id, self.client_id),
            api.request_header_version(version))
        body = b"".join(bytes(c) for c in req.encode(version, out))
        try:
            self.sock.sendall(i32.pack(len(body)) + body)
            size = i32.unpack(self._recv(4))[0]
            data = self._recv(size)
        except BaseException:
            self.close()
            raise
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

