"""A blocking JSON-over-HTTP client of a service with several equal servers (a Schema Registry,
a Connect cluster): each URL is tried in turn until one answers. The callers turn its two
errors into their service's own."""
from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from urllib.parse import unquote, urlsplit, urlunsplit


class AnswerError(Exception):
    """A server answered with an HTTP error: its ``status`` and its body's JSON (None if the
    body is not JSON), ``reason`` the status line's text."""

    def __init__(self, status: int, body, reason: str, raw: bytes):
        super().__init__(f"{status} {reason}")
        self.status, self.body, self.reason, self.raw = status, body, reason, raw


class Unreachable(Exception):
    """No server answered (the last failure is the message), or one answered no JSON."""


def split_credentials(url: str) -> tuple[str, str | None]:
    """(``url`` without its ``user:password@``, a basic ``Authorization`` value or None)."""
    parts = urlsplit(url.strip())
    if parts.username is None:
        return url.strip().rstrip("/"), None
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    netloc = host + (f":{parts.port}" if parts.port else "")
    user_info = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return (urlunsplit(parts._replace(netloc=netloc)).rstrip("/"),
            "Basic " + base64.b64encode(user_info.encode()).decode())


def request_json(urls: list[str], target: str, *, method: str = "GET", body=None,
                 headers: dict[str, str] | None = None, timeout: float = 10.0,
                 context: ssl.SSLContext | None = None):
    """The JSON answer (None for an empty body) to ``method`` ``target`` (a path with its
    query) from the first of ``urls`` that answers. A URL's ``user:password@`` is sent as
    basic authentication, unless ``headers`` has an ``Authorization`` of its own."""
    data = None if body is None else json.dumps(body).encode()
    headers = dict(headers or {})
    if data is not None:
        headers.setdefault("Content-Type", "application/json")
    failure = None
    for given in urls:
        url, authorization = split_credentials(given)
        sent = headers if authorization is None or "Authorization" in headers \
            else {**headers, "Authorization": authorization}
        request = urllib.request.Request(url + target, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as err:
            raw = err.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            raise AnswerError(err.code, parsed, str(err.reason), raw) from None
        except OSError as err:
            failure = getattr(err, "reason", err)
            continue
        try:
            return json.loads(raw) if raw.strip() else None
        except ValueError:
            raise Unreachable(f"{url}{target} answered no JSON") from None
    raise Unreachable(str(failure))
