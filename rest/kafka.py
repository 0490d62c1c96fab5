"""The proxy's Kafka clients (confluent-kafka): one producer shared by every produce request
(its delivery reports served on the event loop, ``rest/produce.py``), an admin client, a
small metadata cache, and a thread pool for the clients' blocking calls."""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient

from josefk.httpd.server import HttpError
from josefk.rest.produce import Reports, produce

METADATA_MAX_AGE = 5.0
# Java's partitioning (murmur2 of the key; a partition of the partitioner's choosing for records
# without one). An answer waits for all its records, so the linger is latency every request
# pays: 0.5 ms still batches the requests in flight, and their reports are in by the next
# time reports are served (rest/produce.py, every ms).
PRODUCER_DEFAULTS = {"partitioner": "murmur2_random", "linger.ms": 0.5}


def topic_not_found() -> HttpError:
    return HttpError(404, 40401, "Topic not found.")


def partition_not_found() -> HttpError:
    return HttpError(404, 40402, "Partition not found.")


# Kafka's errors as Confluent's services answer them (rest-utils' KafkaExceptionMapper):
# (HTTP status, error code) by librdkafka's error name.
_BAD_REQUEST = (400, 40002)
KAFKA_ERRORS = {
    **dict.fromkeys(("TOPIC_ALREADY_EXISTS", "INVALID_REPLICATION_FACTOR", "SECURITY_DISABLED",
                     "UNSUPPORTED_VERSION", "INVALID_PARTITIONS", "INVALID_REQUEST", "UNKNOWN",
                     "POLICY_VIOLATION", "INVALID_CONFIG", "TOPIC_DELETION_DISABLED",
                     "TOPIC_EXCEPTION"), _BAD_REQUEST),
    "UNKNOWN_TOPIC_OR_PART": (404, 40403), "UNKNOWN_TOPIC_ID": (404, 40403),
    "BROKER_NOT_AVAILABLE": (503, 50302), "MSG_SIZE_TOO_LARGE": (413, 413),
    "THROTTLING_QUOTA_EXCEEDED": (429, 42901),
    "SASL_AUTHENTICATION_FAILED": (401, 40101), "_AUTHENTICATION": (401, 40101),
}


# A call's failure to reach the cluster at all.
UNREACHED = {KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN}


def kafka_error(e) -> HttpError:
    """A Kafka client's failure (a KafkaException or KafkaError) as Confluent's answer:
    authorization failures 403/40301, other retriable errors 500/50003, the rest 500/50002."""
    err = e.args[0] if isinstance(e, KafkaException) and e.args else e
    name = err.name() if hasattr(err, "name") else ""
    if name in KAFKA_ERRORS:
        status, code = KAFKA_ERRORS[name]
    elif name.endswith("_AUTHORIZATION_FAILED"):
        status, code = 403, 40301
    else:
        status, code = 500, 50003 if getattr(err, "retriable", lambda: False)() else 50002
    return HttpError(status, code, err.str() if hasattr(err, "str") else str(err))


class Kafka:
    def __init__(self, client: dict, producer: dict, admin: dict, timeout_ms: int):
        self.client = client
        self.timeout = timeout_ms / 1000
        self.auth_failure = None  # the cluster's last refusal of our credentials (error_cb)
        reported = {"error_cb": self._client_error}
        self.producer = Producer({**client, **PRODUCER_DEFAULTS, **producer, **reported})
        self.reports = Reports(self.producer)
        self.admin = AdminClient({**client, **admin, **reported})
        self.pool = ThreadPoolExecutor(8, thread_name_prefix="kafka")
        self.topics: dict[str, tuple[float, object]] = {}

    def _client_error(self, err) -> None:
        """librdkafka's errors outside any one request (served by poll)."""
        if err.code() == KafkaError._AUTHENTICATION:
            self.auth_failure = err

    def error(self, e) -> HttpError:
        """A failed call's answer (``kafka_error``). librdkafka reports a refused SASL login
        on the side and fails the call as a transport failure or a timeout; that call is
        answered as the refusal, 401/40101, as Confluent's proxy answers the Java client's
        SaslAuthenticationException."""
        self.admin.poll(0)
        err = e.args[0] if isinstance(e, KafkaException) and e.args else e
        if self.auth_failure is not None and getattr(err, "code", lambda: None)() in UNREACHED:
            return kafka_error(self.auth_failure)
        return kafka_error(err)

    async def produce(self, topic: str, records: list) -> list:
        """See ``rest.produce.produce``."""
        return await produce(self.producer, self.reports, topic, records, self.timeout)

    async def call(self, fn, *args):
        """A blocking client call on the pool; Kafka failures as Confluent's errors."""
        try:
            result = await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        except KafkaException as e:
            raise self.error(e) from None
        self.auth_failure = None
        return result

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
            d = await self.call(describe)
        except HttpError as e:
            if e.code == KAFKA_ERRORS["UNKNOWN_TOPIC_OR_PART"][1]:
                self.topics.pop(name, None)
                raise topic_not_found() from None
            raise
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
        self.producer.flush(5)
        self.pool.shutdown(wait=False, cancel_futures=True)
