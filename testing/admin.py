"""Topics for tests, made with CreateTopics as any admin client makes them, on josefk or on any
Kafka cluster: sent to the controller, then waited for until every broker leads or follows
them (so that a client's first Metadata finds the topic ready)."""
from __future__ import annotations

import contextlib
import time

from josefk.tools.client import Client, KafkaError
from josefk.wire import errors
from josefk.wire.apis import CREATE_TOPICS, DELETE_TOPICS, METADATA

CLIENT_ID = "josefk-testing"


def metadata(client: Client, topics=None):
    """The Metadata answer for ``topics`` (None: every topic; [] none)."""
    R = METADATA.Request
    wanted = None if topics is None else [R.MetadataRequestTopic(name=t) for t in topics]
    return client.request(METADATA, topics=wanted, allow_auto_topic_creation=False)


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict | None = None,
                 replication_factor: int = -1, timeout: float = 30.0) -> None:
    """Create ``name`` and wait until every broker knows all its partitions' leaders. Raises
    ``KafkaError`` (e.g. TOPIC_ALREADY_EXISTS) when the cluster refuses."""
    deadline = time.monotonic() + timeout
    R = CREATE_TOPICS.Request
    configs = [R.CreatableTopicConfig(name=k, value=property_text(v))
               for k, v in (config or {}).items()]
    topic = R.CreatableTopic(name=name, num_partitions=partitions,
                             replication_factor=replication_factor, configs=configs)
    with _controller(bootstrap, timeout) as (admin, brokers):
        (answer,) = admin.request(CREATE_TOPICS, topics=[topic],
                                  timeout_ms=int(timeout * 1000)).topics
    _check(answer)
    for address in brokers:
        _wait_for_leaders(address, name, partitions, deadline)


def delete_topic(bootstrap: str, name: str, timeout: float = 30.0) -> None:
    """Delete ``name`` (the cluster finishes deleting it in its own time)."""
    with _controller(bootstrap, timeout) as (admin, _brokers):
        (answer,) = admin.request(DELETE_TOPICS, topic_names=[name],
                                  topics=[DELETE_TOPICS.Request.DeleteTopicState(name=name)],
                                  timeout_ms=0).responses
    _check(answer)


@contextlib.contextmanager
def _controller(bootstrap: str, timeout: float):
    """A client of the cluster's controller (where Kafka in ZooKeeper mode takes topic
    changes; KRaft brokers forward them from anywhere), and every broker's address."""
    with Client(bootstrap, CLIENT_ID, timeout=timeout) as c:
        md = metadata(c, [])
        brokers = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
        controller = brokers.get(md.controller_id)
        if controller is None or len(brokers) == 1:
            yield c, list(brokers.values())
            return
    with Client(controller, CLIENT_ID, timeout=timeout) as admin:
        yield admin, list(brokers.values())


def _check(answer) -> None:
    if answer.error_code:
        raise KafkaError(answer.error_code,
                         answer.error_message or errors.name(answer.error_code))


def _wait_for_leaders(address: str, name: str, partitions: int, deadline: float) -> None:
    with Client(address, CLIENT_ID, timeout=max(deadline - time.monotonic(), 1)) as c:
        while True:
            (t,) = metadata(c, [name]).topics
            if not t.error_code and t.partitions and all(p.leader_id >= 0 for p in t.partitions) \
                    and (partitions < 0 or len(t.partitions) == partitions):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name!r} has no leader for every partition on "
                                   f"{address} (error {errors.name(t.error_code)})")
            time.sleep(0.02)


def property_text(value) -> str:
    """A Kafka property's text: booleans as Kafka writes them, everything else as str()."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def topic_specs(topics) -> list[tuple[str, int, dict | None]]:
    """``topics=`` of `josefk.testing.broker` and `cluster`: names, or a mapping of names to a
    partition count or to ``{"partitions": n, "config": {...}}``; as (name, partitions, config)."""
    if topics is None:
        return []
    if isinstance(topics, str):
        topics = [topics]
    if not isinstance(topics, dict):
        return [(name, 1, None) for name in topics]
    specs = []
    for name, spec in topics.items():
        if isinstance(spec, dict):
            specs.append((name, spec.get("partitions", 1), spec.get("config")))
        else:
            specs.append((name, int(spec), None))
    return specs


class Topics:
    """Topics on the cluster at ``bootstrap_servers`` (a broker or cluster handle's)."""

    bootstrap_servers: str

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None,
                     replication_factor: int = -1) -> str:
        """Create topic ``name`` (``config``: Kafka topic configs; -1: the broker's default
        replication factor) and wait until every broker knows its leaders; returns the name."""
        create_topic(self.bootstrap_servers, name, partitions, config, replication_factor)
        return name

    def delete_topic(self, name: str) -> None:
        delete_topic(self.bootstrap_servers, name)
