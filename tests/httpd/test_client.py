"""httpd/client.py: the JSON client of several equal servers, against real HTTP servers."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from josefk.httpd.client import AnswerError, Unreachable, request_json, split_credentials


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/missing":
            self._answer(404, b'{"error_code": 40401, "message": "Subject not found"}')
        elif self.path == "/broken":
            self._answer(500, b"<html>oops</html>")
        elif self.path == "/text":
            self._answer(200, b"not json")
        elif self.path == "/empty":
            self._answer(204, b"")
        else:
            self._answer(200, json.dumps({"path": self.path,
                                          "auth": self.headers.get("Authorization")}).encode())

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(200, json.dumps({"got": body,
                                      "type": self.headers["Content-Type"]}).encode())


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_the_first_server_that_answers_answers(server):
    assert request_json([refused_url(), server], "/a?b=1") == {"path": "/a?b=1", "auth": None}
    assert request_json([server], "/x", method="POST", body={"k": 1}) == {
        "got": {"k": 1}, "type": "application/json"}
    assert request_json([server], "/empty") is None


def test_credentials_in_the_url_unless_a_header_says_otherwise(server):
    with_user = server.replace("http://", "http://u%40x:p@")
    assert split_credentials(with_user + "/") == (server, "Basic dUB4OnA=")
    assert request_json([with_user], "/a")["auth"] == "Basic dUB4OnA="
    assert request_json([with_user], "/a", headers={"Authorization": "Bearer t"})["auth"] \
        == "Bearer t"


def test_errors(server):
    with pytest.raises(AnswerError) as err:  # an error answer ends the search at once
        request_json([server, refused_url()], "/missing")
    assert (err.value.status, err.value.body["error_code"]) == (404, 40401)
    with pytest.raises(AnswerError) as err:
        request_json([server], "/broken")
    assert err.value.body is None and err.value.raw == b"<html>oops</html>"
    with pytest.raises(Unreachable, match="answered no JSON"):
        request_json([server], "/text")
    with pytest.raises(Unreachable, match="refused"):
        request_json([refused_url(), refused_url()], "/a", timeout=2)
