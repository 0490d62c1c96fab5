"""The herder: what the REST API asks of a worker (Kafka Connect's ``Herder``), and the answers'
shapes. ``StandaloneHerder`` (one worker, configs from files, offsets in a local file) and
``DistributedHerder`` (a group of workers over the three internal topics) implement it; the
REST layer knows only this protocol.

Every method is a coroutine on the worker's event loop. Failures are ``HerderError``s carrying
the HTTP status Connect answers with; ``NotLeader`` carries the leader's URL, where the REST
layer forwards the request (Connect's ``NotLeaderException``)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any, Protocol

from josefk.connect.runtime.loggers import Loggers

# KIP-507: what a worker signs its internal requests with, in Java's Mac names.
SIGNATURE_HEADER = "X-Connect-Authorization"
SIGNATURE_ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
MAC_DIGESTS = {"HmacSHA1": hashlib.sha1, "HmacSHA224": hashlib.sha224,
               "HmacSHA256": hashlib.sha256, "HmacSHA384": hashlib.sha384,
               "HmacSHA512": hashlib.sha512}


class HerderError(Exception):
    """A request the herder refuses: ``status`` is the HTTP status, the message Connect's."""
    status = 500

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class BadRequest(HerderError):
    status = 400


class NotFound(HerderError):
    """``Connector x not found`` (Connect's NotFoundException)."""
    status = 404


class AlreadyExists(HerderError):
    """``Connector x already exists``."""
    status = 409


class Rebalancing(HerderError):
    """``Cannot complete request momentarily due to stale configuration (typically caused by a
    concurrent config change)`` / ``... because a rebalance is in progress`` (409)."""
    status = 409


class NotLeader(HerderError):
    """This worker is not the group's leader; ``leader_url`` is (None: not known yet, 409)."""
    status = 409

    def __init__(self, message: str, leader_url: str | None):
        super().__init__(message)
        self.leader_url = leader_url


class Forbidden(HerderError):
    status = 403


def sign(key: bytes, body: bytes, algorithm: str) -> str:
    """The base64 ``X-Connect-Authorization`` of ``body`` (Connect's InternalRequestSignature)."""
    if algorithm not in MAC_DIGESTS:
        raise BadRequest(f"Algorithm {algorithm} not available")
    return base64.b64encode(hmac.new(key, body, MAC_DIGESTS[algorithm]).digest()).decode()


@dataclass(frozen=True)
class RequestSignature:
    """An internal request's body with the signature and algorithm its headers carry."""
    body: bytes
    algorithm: str
    signature: str

    def is_valid(self, key: bytes) -> bool:
        try:
            given = base64.b64decode(self.signature, validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(base64.b64decode(sign(key, self.body, self.algorithm)), given)


class Herder(Protocol):
    """JSON-shaped answers (dicts and lists), as Connect's REST entities serialise.
    ``loggers``: this worker's log levels (KIP-495's worker scope)."""

    loggers: Loggers

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """KIP-976: ``level`` (a Log4j name) on ``namespace`` in every worker of the cluster
        (through the config topic; a standalone worker is its whole cluster)."""

    async def connectors(self) -> list[str]: ...

    async def connector_info(self, name: str) -> dict:
        """``{"name", "config", "tasks": [{"connector", "task"}], "type": "source"|"sink"}``."""

    async def connector_config(self, name: str) -> dict[str, str]: ...

    async def put_connector_config(self, name: str, config: dict[str, str],
                                   allow_replace: bool,
                                   initial_state: str | None = None) -> tuple[bool, dict]:
        """Create (or with ``allow_replace`` update) a connector; (created, connector info).
        Invalid configs raise BadRequest with Connect's message (``Connector configuration is
        invalid and contains the following N error(s): ...``). ``initial_state`` (KIP-980:
        ``STARTED``, ``PAUSED`` or ``STOPPED``, a TargetState's value) is a new connector's
        target state; None: STARTED."""

    async def put_task_configs(self, name: str, configs: list[dict[str, str]],
                               signature: RequestSignature | None) -> None:
        """A follower's connector's new task configs, written by the leader once their KIP-507
        signature is verified (Connect's internal ``POST /connectors/{name}/tasks``)."""

    async def fence_zombies(self, name: str, signature: RequestSignature | None) -> None:
        """KIP-618: the leader fences the producers of the connector's previous task generation
        and writes its task-count record (Connect's internal ``PUT
        /connectors/{name}/fence``)."""

    def ready(self) -> bool:
        """The herder has completed start-up (KIP-1017's ``starting`` until then)."""

    async def patch_connector_config(self, name: str, patch: dict[str, Any]) -> dict:
        """KIP-477: merge ``patch`` (a None value removes the key); the connector info."""

    async def delete_connector(self, name: str) -> None: ...

    async def connector_status(self, name: str) -> dict:
        """``{"name", "connector": {"state", "worker_id"[, "trace"]}, "tasks": [{"id", "state",
        "worker_id"[, "trace"]}], "type"}``."""

    async def task_configs(self, name: str) -> list[dict]:
        """``[{"id": {"connector", "task"}, "config": {...}}]``."""

    async def task_status(self, name: str, task: int) -> dict:
        """``{"id", "state", "worker_id"[, "trace"]}``."""

    async def connector_topics(self, name: str) -> list[str]:
        """The topics the connector has used (KIP-558)."""

    async def reset_connector_topics(self, name: str) -> None: ...

    async def restart_connector(self, name: str, include_tasks: bool,
                                only_failed: bool) -> dict | None:
        """KIP-745: None when only the connector restarts (204); else the status with what
        is restarting marked ``RESTARTING`` (202)."""

    async def restart_task(self, name: str, task: int) -> None: ...

    async def pause_connector(self, name: str) -> None: ...

    async def resume_connector(self, name: str) -> None: ...

    async def stop_connector(self, name: str) -> None: ...

    async def connector_offsets(self, name: str) -> dict:
        """KIP-875: ``{"offsets": [{"partition": {...}, "offset": {...}}]}``; a sink's
        partitions are ``{"kafka_topic", "kafka_partition"}``, offsets ``{"kafka_offset"}``."""

    async def alter_connector_offsets(self, name: str, offsets: list[dict]) -> str:
        """KIP-875 (the connector must be STOPPED): Connect's success message."""

    async def reset_connector_offsets(self, name: str) -> str: ...

    async def validate_connector_config(self, config: dict[str, str]) -> dict:
        """Connect's ConfigInfos: ``{"name", "error_count", "groups", "configs": [{"definition":
        {...}, "value": {"name", "value", "recommended_values", "errors", "visible"}}]}``."""

    async def connector_plugins(self, connectors_only: bool) -> list[dict]:
        """``[{"class", "type", "version"}]``: source and sink connectors, and with
        ``connectors_only=False`` converters, header converters, transformations and
        predicates."""

    async def plugin_config(self, plugin: str) -> list[dict]:
        """KIP-769: the plug-in's settings, each ``{"name", "type", "required",
        "default_value", "importance", "documentation", "group", "width", "display_name",
        "dependents", "order"}``."""

    def kafka_cluster_id(self) -> str: ...

    def worker_url(self) -> str:
        """This worker's advertised REST URL (its id in statuses)."""
