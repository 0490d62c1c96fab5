"""What a handler may use of the broker: every ``handle_<api>(broker, ctx, request)`` gets an
object with these members and no other (`app.Broker` has them; a test fakes them). A handler
that needs something new declares it here first, so the seam between the handlers and the
process wiring stays written down. ``tests/test_handler_services.py`` checks that `app.Broker`
satisfies it and that no handler reaches past it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from josefk.broker.client_metrics import ClientMetricsManager
    from josefk.broker.config import BrokerConfig
    from josefk.broker.control.cluster import ClusterMember
    from josefk.broker.control.metadata import MetadataStore, TopicMeta
    from josefk.broker.dynamic import DynamicConfigs
    from josefk.broker.fetch_sessions import FetchSessionCache
    from josefk.broker.group_configs import GroupConfigs
    from josefk.broker.group_log import InternalTopics
    from josefk.broker.handlers.metadata import TopicMetadataCache
    from josefk.broker.links import LinkManager
    from josefk.broker.replication.replica import ReplicaManager
    from josefk.broker.security.authorizer import AclAuthorizer
    from josefk.broker.security.listeners import ListenerSecurity
    from josefk.broker.security.quotas import QuotaManager
    from josefk.broker.security.sasl import LocalCredentialStore
    from josefk.broker.security.zk_credentials import ZkCredentialStore
    from josefk.broker.share.manager import SharePartitionManager
    from josefk.broker.share.persister import Persister
    from josefk.coordinator import GroupCoordinator
    from josefk.coordinator.producer_ids import ProducerIdManager
    from josefk.coordinator.share_groups import ShareGroups
    from josefk.coordinator.share_state import ShareCoordinator
    from josefk.coordinator.txn_coordinator import TransactionCoordinator
    from josefk.storage.manager import LogManager


class Services(Protocol):
    # settings
    config: BrokerConfig
    dynamic: DynamicConfigs
    group_configs: GroupConfigs
    listeners: list[ListenerSecurity]
    # cluster state and this broker's partitions
    metadata: MetadataStore
    topic_metadata: TopicMetadataCache
    cluster: ClusterMember | None  # None on a single broker
    replicas: ReplicaManager
    logs: LogManager
    fetch_sessions: FetchSessionCache
    links: LinkManager  # cluster links and the mirror partitions led here
    internal_topics: InternalTopics
    # coordinators
    groups: GroupCoordinator
    txn: TransactionCoordinator
    producer_ids: ProducerIdManager
    share_groups: ShareGroups
    share_state: ShareCoordinator
    share_persister: Persister
    share: SharePartitionManager
    # security and clients
    authorizer: AclAuthorizer | None  # None without authorizer.class.name
    credentials: LocalCredentialStore | ZkCredentialStore
    quotas: QuotaManager
    client_metrics: ClientMetricsManager

    @property
    def api_versions(self) -> list:
        """What ApiVersions advertises: every declared API this broker handles."""

    @property
    def features(self) -> tuple[list, list, int]:
        """Supported and finalized features (KIP-584) and the finalized features' epoch."""

    def auto_create_topic(self, name: str) -> TopicMeta | None:
        """Create ``name`` with the broker defaults if auto creation is enabled; else None."""

    def topic_error_for_produce(self, name: str) -> int:
        """NONE if ``name`` exists (auto-creating it if allowed), else the error to answer."""
