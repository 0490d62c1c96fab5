"""The proxy's Kafka clients (confluent-kafka): one producer shared by every produce request,
an admin client, a small metadata cache, and a thread pool for the clients' blocking calls."""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from confluent_kafka import KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient

from josefk.httpd.server import HttpError

METADATA_MAX_AGE = 5.0


def topic_not_found() -> HttpError:
    return HttpError(404, 40401, "Topic not found.")


def partition_not_found() -> HttpError:
    return HttpError(404, 40402, "Partition not found.")


def kafka_error(e) -> HttpError:
    err = e.args[0] if isinstance(e, KafkaException) and e.args else e
    retriable = getattr(err, "retriable", lambda: False)()
    return HttpError(500, 50003 if retriable else 50002, f"Kafka error: {err}")


class Kafka:
    def __init__(self, client: dict, producer: dict, admin: dict, timeout_ms: int):
        self.client = client
        self.timeout = timeout_ms / 1000
        self.producer = Producer({**client, "partitioner": "murmur2_random", "linger.ms": 5,
                                  **producer})
        self.admin = AdminClient({**client, **admin})
        self.pool = ThreadPoolExecutor(8, thread_name_prefix="kafka")
        self.topics: dict[str, tuple[float, object]] = {}
        self.stopping = threading.Event()
        self.poller = threading.Thread(target=self._poll, daemon=True, name="deliveries")
        self.poller.start()
        self._cluster = None

    def _poll(self):
        while not self.stopping.is_set():
            self.producer.poll(0.05)

    async def call(self, fn, *args):
        """A blocking client call on the pool; Kafka failures as Confluent's 5000x errors."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        except KafkaException as e:
            raise kafka_error(e) from None

    async def topic(self, name: str, refresh: bool = False):
        """The topic (``.topic``, ``.partitions``: {id: ``.id .leader .replicas .isrs``}),
        cached a few seconds, or 40401. DescribeTopics, unlike a Metadata request for one
        topic, never creates it."""
        cached = self.topics.get(name)
        if cached and not refresh and time.monotonic() - cached[0] < METADATA_MAX_AGE:
            return cached[1]

        def describe():
            fut = self.admin.describe_topics(TopicCollection([name]),
                                             request_timeout=self.timeout)[name]
            return fut.result(self.timeout)

        try:
            d = await asyncio.get_running_loop().run_in_executor(self.pool, describe)
        except KafkaException as e:
            if e.args and getattr(e.args[0], "code", lambda: None)() == 3:
                self.topics.pop(name, None)
                raise topic_not_found() from None
            raise kafka_error(e) from None
        t = SimpleNamespace(topic=name, partitions={p.id: SimpleNamespace(
            id=p.id, leader=p.leader.id if p.leader else -1,
            replicas=[r.id for r in p.replicas], isrs=[r.id for r in p.isr])
            for p in d.partitions})
        self.topics[name] = (time.monotonic(), t)
        return t

    async def metadata(self):
        return await self.call(lambda: self.admin.list_topics(timeout=self.timeout))

    async def cluster(self):
        """describe_cluster's answer: cluster id, controller, nodes."""
        return await self.call(lambda: self.admin.describe_cluster(
            request_timeout=self.timeout).result(self.timeout))

    async def wait(self, futures: dict):
        """The results of an admin call's futures ({key: result or exception})."""

        def collect():
            out = {}
            for key, fut in futures.items():
                try:
                    out[key] = fut.result(self.timeout)
                except Exception as e:  # noqa: BLE001 - reported per key
                    out[key] = e
            return out

        return await self.call(collect)

    def close(self):
        self.stopping.set()
        self.poller.join(timeout=2)
        self.producer.flush(5)
        self.pool.shutdown(wait=False, cancel_futures=True)


class Deliveries:
    """The delivery reports of one request's records: ``callback(i)`` for record ``i``;
    ``await done`` once every report is in (one hand-off to the loop per request)."""

    def __init__(self, count: int, loop):
        self.results: list = [None] * count
        self.left = count
        self.lock = threading.Lock()
        self.loop = loop
        self.done = loop.create_future()
        if count == 0:
            self.done.set_result(None)

    def callback(self, i: int):
        def delivered(err, msg):
            self.results[i] = (err, msg.partition(), msg.offset(), msg.timestamp()[1])
            with self.lock:
                self.left -= 1
                last = self.left == 0
            if last:
                self.loop.call_soon_threadsafe(_finish, self.done)

        return delivered

    def fail(self, i: int, err):
        """Record ``i`` never reached the producer."""
        self.results[i] = (err, None, None, None)
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            _finish(self.done)


def _finish(fut):
    if not fut.done():
        fut.set_result(None)
