"""KIP-618 zombie fencing (Kafka's Admin.fenceProducers as Connect's leader uses it): each
transactional id gets a new producer epoch from its transaction coordinator (FindCoordinator with
key type 1, then InitProducerId), which aborts its open transaction and fences the producer that
holds the older epoch. confluent-kafka has no such call, so the tools' client makes it."""
from __future__ import annotations

import time

from josefk.tools.client import KafkaError
from josefk.tools.tool_client import ClusterClient
from josefk.wire import errors
from josefk.wire.apis import FIND_COORDINATOR, INIT_PRODUCER_ID

TRANSACTION_KEY = 1
# What a coordinator answers while it cannot yet (loading, moving, aborting the open transaction)
RETRIABLE = {errors.COORDINATOR_LOAD_IN_PROGRESS, errors.COORDINATOR_NOT_AVAILABLE,
             errors.NOT_COORDINATOR, errors.CONCURRENT_TRANSACTIONS}
RETRY_BACKOFF_S = 0.1


def security_props(config) -> dict:
    """The worker's client security settings (``security.protocol``, ``ssl.*``, ``sasl.*``)."""
    return {k: v for k, v in config.props.items()
            if k == "security.protocol" or k.startswith(("ssl.", "sasl."))}


def cluster_client(config, client_id: str) -> ClusterClient:
    cc = ClusterClient(",".join(config["bootstrap.servers"]), client_id,
                       props=security_props(config))
    cc.refresh([])
    return cc


def transactional_id(group_id: str, connector: str, task: int) -> str:
    return f"{group_id}-{connector}-{task}"


def fence_producers(cc: ClusterClient, ids: list[str], timeout_s: float) -> None:
    """Fence every producer of ``ids``; KafkaError (or TimeoutError) when one cannot be."""
    deadline = time.monotonic() + timeout_s
    for tid in ids:
        while True:
            code = _init_producer_id(cc, tid)
            if code == errors.NONE:
                break
            if code not in RETRIABLE:
                raise KafkaError(code, f"Failed to fence producer with transactional ID {tid}: "
                                       f"{errors.name(code)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Timed out fencing producer with transactional ID {tid} "
                                   f"({errors.name(code)})")
            time.sleep(RETRY_BACKOFF_S)


def _init_producer_id(cc: ClusterClient, tid: str) -> int:
    found = cc.bootstrap.request(FIND_COORDINATOR, key=tid, key_type=TRANSACTION_KEY,
                                 coordinator_keys=[tid])
    node = found.coordinators[0] if found.coordinators else found
    if node.error_code:
        return node.error_code
    if node.node_id not in cc.brokers:
        cc.refresh([])
    answer = cc.broker(node.node_id).request(INIT_PRODUCER_ID, transactional_id=tid,
                                             transaction_timeout_ms=60000, producer_id=-1,
                                             producer_epoch=-1)
    return answer.error_code
