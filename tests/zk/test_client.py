"""The broker's ZooKeeper client (zk/client.py) on real sockets: how it reconnects."""
from __future__ import annotations

import asyncio
import socket
import threading
import time

from josefk.zk.client import ZkClient

SESSION_TIMEOUT_MS = 3000


def test_a_connect_attempt_left_unanswered_gives_up_within_a_third_of_the_session():
    """A ZooKeeper still starting accepts connections but answers none yet. kazoo waited for
    the answer for the session timeout divided by the number of hosts, with one host the whole
    session: a broker whose session was alive lost it on that one attempt. Each attempt now
    gives up after a third of the session timeout and the next follows at once (after kazoo's
    back-off of at most a sixth)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted, held, done = [], [], threading.Event()

    def accept():
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            accepted.append(time.monotonic())
            held.append(conn)  # read nothing, answer nothing

    t = threading.Thread(target=accept, daemon=True)
    t.start()

    async def main():
        zk = ZkClient(f"127.0.0.1:{server.getsockname()[1]}", SESSION_TIMEOUT_MS,
                      connect_timeout_ms=5000)
        try:
            await zk.start()
        except Exception:  # noqa: BLE001 - kazoo's start time-out: nothing ever answered
            pass
        finally:
            await zk.stop()

    try:
        asyncio.run(main())
    finally:
        done.set()
        t.join(5)
        for conn in held:
            conn.close()
        server.close()
    gaps = [b - a for a, b in zip(accepted, accepted[1:])]
    limit = SESSION_TIMEOUT_MS / 1000 * (1 / 3 + 1 / 6) + 0.3
    assert len(accepted) >= 3 and max(gaps) < limit, (gaps, limit)
