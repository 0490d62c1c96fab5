"""v2 consumer instances: one confluent-kafka Consumer each, driven on a thread of its own
(a Consumer's calls block), closed when deleted or idle for ``consumer.instance.timeout.ms``."""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import Consumer, KafkaException

from josefk.httpd.server import HttpError
from josefk.rest.kafka import kafka_error

log = logging.getLogger("josefk.rest.consumers")


def instance_not_found() -> HttpError:
    return HttpError(404, 40403, "Consumer instance not found.")


class Instance:
    def __init__(self, group: str, name: str, fmt: str, consumer: Consumer):
        self.group, self.name, self.format, self.consumer = group, name, fmt, consumer
        self.thread = ThreadPoolExecutor(1, thread_name_prefix=f"consumer-{name}")
        self.subscription: list[str] = []
        self.pattern = False
        self.assigned_manually = False
        self.request_timeout_ms = 1000  # how long a records request waits for records
        self.last_used = time.monotonic()

    async def run(self, fn, *args):
        self.last_used = time.monotonic()
        try:
            return await asyncio.get_running_loop().run_in_executor(self.thread, fn, *args)
        except KafkaException as e:
            raise kafka_error(e) from None
        finally:
            self.last_used = time.monotonic()

    def close(self):
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError) as e:
            log.warning("closing consumer %s/%s: %s", self.group, self.name, e)
        self.thread.shutdown(wait=False)


class Instances:
    def __init__(self, client: dict, consumer_conf: dict, timeout_ms: int):
        self.client, self.conf = client, consumer_conf
        self.timeout = timeout_ms / 1000
        self.instances: dict[tuple[str, str], Instance] = {}
        self.counter = 0

    def create(self, group: str, name: str | None, fmt: str, settings: dict) -> Instance:
        if name is None:
            self.counter += 1
            name = f"rest-consumer-{time.time_ns():x}-{self.counter}"
        if (group, name) in self.instances:
            raise HttpError(409, 40902, "Consumer with specified consumer ID already exists in "
                                        "the specified consumer group.")
        # Offsets are stored for the records a response returns (not all a poll fetched), so
        # that a commit (or auto-commit) never covers records no client has seen.
        conf = {**self.client, **self.conf, "group.id": group, "client.id": name, **settings,
                "enable.auto.offset.store": False}
        try:
            consumer = Consumer(conf)
        except (KafkaException, ValueError, TypeError) as e:
            raise HttpError(422, 42204, f"Invalid consumer configuration: {e}") from None
        inst = self.instances[(group, name)] = Instance(group, name, fmt, consumer)
        return inst

    def get(self, group: str, name: str) -> Instance:
        inst = self.instances.get((group, name))
        if inst is None:
            raise instance_not_found()
        return inst

    async def delete(self, group: str, name: str) -> None:
        inst = self.instances.pop((group, name), None)
        if inst is None:
            raise instance_not_found()
        await asyncio.get_running_loop().run_in_executor(inst.thread, inst.close)

    async def expire(self) -> None:
        """Close the instances idle for longer than the timeout, every few seconds."""
        while True:
            await asyncio.sleep(min(10.0, self.timeout / 2))
            now = time.monotonic()
            for key, inst in list(self.instances.items()):
                if now - inst.last_used > self.timeout:
                    log.info("consumer instance %s/%s expired", *key)
                    await self.delete(*key)

    def close_all(self) -> None:
        for inst in self.instances.values():
            inst.close()
        self.instances.clear()
