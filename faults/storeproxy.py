"""A proxy in front of the object store's S3 port, for the faults of a store that answers but
badly: every request waits ``delay`` seconds before it goes on (a slow store), a share
``error_share`` of them is answered HTTP 503 SlowDown or 500 InternalError as S3 answers them
(a store answering errors), and requests ``hold`` picks (by method and path) are kept waiting
in `held` until `drop_held` (a copy caught in flight, its leader killed meanwhile).

One request per connection: the proxy forwards each request with ``Connection: close``, so
the client opens a new connection for its next request and every request meets the fault in
force. It runs an event loop on a thread of its own (`start`, `stop`), on 127.0.0.1.
"""
from __future__ import annotations

import asyncio
import random
import threading
from urllib.parse import urlsplit

_ERRORS = ((503, "Slow Down", "SlowDown", "Please reduce your request rate."),
           (500, "Internal Server Error", "InternalError",
            "We encountered an internal error. Please try again."))


class StoreProxy:
    def __init__(self, upstream: str, rng: random.Random | None = None, port: int = 0):
        url = urlsplit(upstream)
        self.upstream = (url.hostname, url.port)
        self.rng = rng or random.Random()
        self.delay = 0.0
        self.error_share = 0.0
        self.hold = None  # callable(method, path) -> bool: keep the request waiting
        self.held: list[tuple[str, str]] = []  # (method, path) of the requests kept waiting
        self.errors_answered = 0
        self.port = port  # 0: one from the OS, known once started
        self._release: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._thread: threading.Thread | None = None
        self._serving: set[asyncio.Task] = set()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        ready = threading.Event()

        def run():
            loop = self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._release = asyncio.Event()
            self._server = loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", self.port))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            self._server.close()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=run, name="josefk-store-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the object-store proxy did not start")

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)

    def heal(self) -> None:
        """No delay, no errors, nothing held (what is held now is dropped)."""
        self.delay, self.error_share, self.hold = 0.0, 0.0, None
        self.drop_held()

    def drop_held(self) -> None:
        """Close the held requests' connections without an answer (their client is gone)."""
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._release.set)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        upstream = None
        task = asyncio.current_task()
        self._serving.add(task)  # asyncio keeps only weak references to its tasks
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")  # at most the reader's 64 KiB
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path = (lines[0].split(" ") + ["", ""])[:2]
            headers = [line for line in lines[1:] if line]
            names = {h.split(":", 1)[0].strip().lower(): h.split(":", 1)[1].strip()
                     for h in headers if ":" in h}
            hold = self.hold
            if hold is not None and hold(method, path):
                self.held.append((method, path))
                self._release.clear()
                await self._release.wait()
                return
            if self.delay > 0:
                await asyncio.sleep(self.delay)
            if "chunked" not in names.get("transfer-encoding", "") \
                    and self.rng.random() < self.error_share:
                await reader.readexactly(int(names.get("content-length", "0")))
                await self._answer_error(writer)
                return
            upstream_r, upstream = await asyncio.open_connection(*self.upstream)
            kept = [h for h in headers if h.split(":", 1)[0].strip().lower()
                    not in ("connection", "keep-alive")]
            upstream.write("\r\n".join([lines[0], *kept, "Connection: close", "", ""])
                           .encode("latin-1"))
            sending = asyncio.ensure_future(_pipe(reader, upstream))
            self._serving.add(sending)
            sending.add_done_callback(self._serving.discard)
            try:
                await _pipe(upstream_r, writer)  # the answer, until the store closes
            finally:
                sending.cancel()
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client sees its connection closed, as from a failing store
        except asyncio.CancelledError:
            pass  # stopped: ends as a finished task (asyncio's stream callback asks its result)
        finally:
            self._serving.discard(task)
            for w in (writer, upstream):
                if w is not None:
                    w.close()

    async def _answer_error(self, writer: asyncio.StreamWriter) -> None:
        status, reason, code, message = self.rng.choice(_ERRORS)
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>{message}</Message></Error>").encode()
        self.errors_answered += 1
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1 << 16):
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
