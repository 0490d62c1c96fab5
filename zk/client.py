"""ZooKeeper access through kazoo, shaped for an asyncio broker.

Every blocking kazoo call runs on a worker thread (``await zk.run(fn)``); kazoo's watch
callbacks arrive on kazoo's threads and are handed to the event loop with
``call_soon_threadsafe``, so broker code only ever runs on the loop.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

log = logging.getLogger("josefk.zk")

# Reconnecting to ZooKeeper backs off to at most about a second between attempts, as ZooKeeper's
# own client does: kazoo's default doubles without bound, so after an outage of a few seconds
# the next attempt came later than the session timeout and every broker lost its session.
RECONNECT_MAX_DELAY_S = 1.0
# kazoo waits for the answer to each connect request for the session timeout divided by the
# number of hosts listed, and offers no setting for it: with one host, an attempt that reached a
# ZooKeeper still starting up could hang for the whole session timeout, and the session expired
# before the next. Listing the hosts again bounds every attempt to a third of the session timeout
# (kazoo goes through the whole list between its back-offs), so a live session reconnects in time.
CONNECT_ATTEMPTS_PER_SESSION_TIMEOUT = 3


def attempt_bounded(hosts: str) -> str:
    """``hosts`` repeated so that kazoo's connect timeout is at most a third of the session's."""
    repeat = -(-CONNECT_ATTEMPTS_PER_SESSION_TIMEOUT // len(hosts.split(",")))
    return ",".join([hosts] * repeat)


class ZkClosed(RuntimeError):
    """The client was stopped (the broker is shutting down)."""


def split_chroot(connect: str) -> tuple[str, str]:
    """``"h1:2181,h2:2181/josefk"`` -> ``("h1:2181,h2:2181", "/josefk")`` (chroot may be "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, ("/" + chroot.rstrip("/")) if slash and chroot.strip("/") else ""


class ZkClient:
    def __init__(self, connect: str, session_timeout_ms: int, connect_timeout_ms: int = 18000):
        self.hosts, self.chroot = split_chroot(connect)
        self.session_timeout_s = session_timeout_ms / 1000
        self.connect_timeout_s = connect_timeout_ms / 1000
        self.loop: asyncio.AbstractEventLoop | None = None
        self.kazoo: KazooClient | None = None
        self._session_listeners = []

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        if self.chroot:
            # kazoo needs the chroot to exist before it can be used as one.
            plain = KazooClient(hosts=self.hosts, timeout=self.session_timeout_s)
            await self.loop.run_in_executor(None, self._ensure_chroot, plain)
        self.kazoo = KazooClient(hosts=attempt_bounded(self.hosts) + self.chroot,
                                 timeout=self.session_timeout_s,
                                 connection_retry=KazooRetry(
                                     max_tries=-1, delay=0.1, backoff=2, max_jitter=0.2,
                                     max_delay=min(RECONNECT_MAX_DELAY_S,
                                                   self.session_timeout_s / 6)))
        self.kazoo.add_listener(self._on_state)
        await self.loop.run_in_executor(
            None, functools.partial(self.kazoo.start, timeout=self.connect_timeout_s))

    def _ensure_chroot(self, plain):
        plain.start(timeout=self.connect_timeout_s)
        try:
            plain.ensure_path(self.chroot)
        finally:
            plain.stop()
            plain.close()

    async def stop(self) -> None:
        if self.kazoo is not None:
            self._session_listeners.clear()  # closing the session on purpose is no news
            k, self.kazoo = self.kazoo, None
            # On a thread of its own: with ZooKeeper away, calls made while reconnecting wait
            # on the shared workers until the session closes, and could hold every one of them.
            closed = self.loop.create_future()
            threading.Thread(target=self._stop, args=(k, closed), name="zk-close",
                             daemon=True).start()
            await closed

    def _stop(self, k, closed: asyncio.Future):
        try:
            k.stop()
            k.close()
        except Exception as e:  # noqa: BLE001 - closing is best effort; the process goes on
            log.warning("closing the ZooKeeper client failed: %s", e)
        finally:
            self._hand_over(lambda: closed.done() or closed.set_result(None))

    async def run(self, fn, *args):
        """Run ``fn(kazoo, *args)`` (one or several calls in a row) on a worker thread. Raises
        ZkClosed once the client is stopped."""
        if self.kazoo is None:
            raise ZkClosed("the ZooKeeper client is closed")
        return await self.loop.run_in_executor(None, fn, self.kazoo, *args)

    # -- session and watches: callbacks run on the event loop ------------------------------------
    def on_session(self, callback) -> None:
        """``callback(state)`` with state one of "connected", "suspended", "lost"."""
        self._session_listeners.append(callback)

    def _hand_over(self, callback, *args) -> None:
        """Run ``callback(*args)`` on the event loop (from a kazoo thread); nothing once the
        client is stopped and its loop gone."""
        try:
            self.loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop closed while kazoo was still delivering
            pass

    def _on_state(self, state):
        name = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended",
                KazooState.LOST: "lost"}[state]
        for cb in self._session_listeners:
            self._hand_over(cb, name)

    async def watch_children(self, path: str, callback) -> None:
        """``callback(children)`` now and on every change of ``path``'s children."""
        def fire(children):
            self._hand_over(callback, sorted(children))

        def setup(k):
            k.ensure_path(path)
            k.ChildrenWatch(path, fire)
        await self.run(setup)

    async def watch_data(self, path: str, callback) -> None:
        """``callback(data_or_None)`` now and on every change of ``path``'s data; stops when
        the callback returns False."""
        stopped = []

        def fire(data, _stat):
            if stopped:
                return False
            def deliver():
                if callback(data) is False:
                    stopped.append(True)
            self._hand_over(deliver)
        await self.run(lambda k: k.DataWatch(path, fire))
