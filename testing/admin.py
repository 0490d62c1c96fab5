"""Topics for tests, and who leads what, asked as any admin client asks, of josefk or of any
Kafka cluster: topic changes go to the controller (where Kafka in ZooKeeper mode takes them;
KRaft brokers forward them from anywhere), and a new topic is waited for until every broker
knows its leaders (so that a client's first Metadata finds it ready)."""
from __future__ import annotations

import time

from josefk.tools.client import Client, KafkaError
from josefk.wire import errors
from josefk.wire.apis import CREATE_TOPICS, DELETE_TOPICS, FIND_COORDINATOR, METADATA

CLIENT_ID = "josefk-testing"
TIMEOUT = 30.0


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


def metadata(client: Client, topics=None):
    """The Metadata answer for ``topics`` (None: every topic; [] none)."""
    R = METADATA.Request
    wanted = None if topics is None else [R.MetadataRequestTopic(name=t) for t in topics]
    return client.request(METADATA, topics=wanted, allow_auto_topic_creation=False)


class Admin:
    """Topics and roles on the cluster at ``bootstrap_servers`` (a broker or cluster handle's)."""

    bootstrap_servers: str

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None,
                     replication_factor: int = -1) -> str:
        """Create topic ``name`` (``config``: Kafka topic configs; -1: the cluster's default
        replication factor) and wait until every broker knows its leaders; returns the name.
        Raises ``KafkaError`` (e.g. TOPIC_ALREADY_EXISTS) when the cluster refuses."""
        deadline = time.monotonic() + TIMEOUT
        R = CREATE_TOPICS.Request
        configs = [R.CreatableTopicConfig(name=k, value=property_text(v))
                   for k, v in (config or {}).items()]
        topic = R.CreatableTopic(name=name, num_partitions=partitions,
                                 replication_factor=replication_factor, configs=configs)
        answer, brokers = self._ask_controller(CREATE_TOPICS, lambda r: r.topics[0], deadline,
                                               topics=[topic], timeout_ms=int(TIMEOUT * 1000))
        _check(answer.error_code, answer.error_message)
        for address in brokers:
            _wait_for_leaders(address, name, partitions, deadline)
        return name

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` (the cluster finishes deleting it in its own time)."""
        answer, _brokers = self._ask_controller(
            DELETE_TOPICS, lambda r: r.responses[0], time.monotonic() + TIMEOUT,
            topic_names=[name], topics=[DELETE_TOPICS.Request.DeleteTopicState(name=name)],
            timeout_ms=0)
        _check(answer.error_code, answer.error_message)

    def leader(self, topic: str, partition: int = 0) -> int:
        """The node id of the leader of ``topic``'s ``partition`` (-1: none now)."""
        with self._client() as c:
            (t,) = metadata(c, [topic]).topics
        _check(t.error_code, None)
        return next((p.leader_id for p in t.partitions if p.partition_index == partition), -1)

    def controller(self) -> int:
        """The node id of the controller (-1: none now)."""
        with self._client() as c:
            return metadata(c, []).controller_id

    def coordinator(self, group: str) -> int:
        """The node id of consumer group ``group``'s coordinator."""
        with self._client() as c:
            resp = c.request(FIND_COORDINATOR, key=group, key_type=0, coordinator_keys=[group])
        answer = resp.coordinators[0] if resp.coordinators else resp
        _check(answer.error_code, answer.error_message)
        return answer.node_id

    def _silent(self) -> set[str]:
        """Addresses of brokers known to answer nothing now (paused ones): not asked."""
        return set()

    def _client(self) -> Client:
        """A client of the first broker of ``bootstrap_servers`` that answers."""
        silent = self._silent()
        addresses = [a for a in self.bootstrap_servers.split(",") if a.strip() not in silent]
        return Client(",".join(addresses), CLIENT_ID, timeout=TIMEOUT)

    def _ask_controller(self, api, answer_of, deadline: float, **fields):
        """``answer_of`` the controller's response to ``api``, and the addresses of the brokers
        to wait for. A controller just killed or paused stays listed until its ZooKeeper session
        ends (or a broker answers NOT_CONTROLLER): asked again until ``deadline``, as Kafka's
        admin client retries."""
        while True:
            answer = None
            with self._client() as c:
                md = metadata(c, [])
                address = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
                brokers = [a for a in address.values() if a not in self._silent()]
                controller = address.get(md.controller_id)
                try:
                    if controller is None or controller == "%s:%d" % c.sock.getpeername()[:2]:
                        answer = answer_of(c.request(api, **fields))
                    elif controller not in self._silent():
                        with Client(controller, CLIENT_ID, timeout=TIMEOUT) as admin:
                            answer = answer_of(admin.request(api, **fields))
                except ConnectionError:  # the controller was killed
                    pass
            if answer is not None and answer.error_code != errors.NOT_CONTROLLER:
                return answer, brokers
            if time.monotonic() > deadline:
                raise TimeoutError(f"{api.name}: no controller of {self.bootstrap_servers} "
                                   f"answered within {TIMEOUT:.0f} s")
            time.sleep(0.1)


def _check(code: int, message: str | None) -> None:
    if code:
        raise KafkaError(code, message or errors.name(code))


def _wait_for_leaders(address: str, name: str, partitions: int, deadline: float) -> None:
    try:
        client = Client(address, CLIENT_ID, timeout=max(deadline - time.monotonic(), 1))
    except ConnectionError:  # a broker just killed, still listed: no client reaches it either
        return
    with client as c:
        while True:
            (t,) = metadata(c, [name]).topics
            if not t.error_code and t.partitions and all(p.leader_id >= 0 for p in t.partitions) \
                    and (partitions < 0 or len(t.partitions) == partitions):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name!r} has no leader for every partition on "
                                   f"{address} (error {errors.name(t.error_code)})")
            time.sleep(0.02)
