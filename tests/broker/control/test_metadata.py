"""Both metadata stores implement `MetadataStore` exactly: every member of the interface, with
its signature and its sync or async nature, so handlers never need to know which store is
behind ``broker.metadata``."""
from __future__ import annotations

import inspect

import pytest

from josefk.broker.config import BrokerConfig
from josefk.broker.control.metadata import BrokerInfo, LocalMetadataStore, MetadataStore
from josefk.broker.control.zk_metadata import ZkMetadataStore

METHODS = [n for n, v in vars(MetadataStore).items()
           if not n.startswith("_") and inspect.isfunction(v)]
ATTRIBUTES = list(MetadataStore.__annotations__)


def _stores(tmp_path):
    me = BrokerInfo(1, "127.0.0.1", 9092)
    config = BrokerConfig.load(None, {"log.dirs": str(tmp_path), "node.id": "1"})
    return [LocalMetadataStore(str(tmp_path), me, "cluster"), ZkMetadataStore(None, me, config)]


def test_the_interface_is_what_the_broker_uses():
    assert METHODS == ["request_topic", "create_topic", "delete_topic", "create_partitions",
                       "alter_topic_configs", "topic_configs", "topics_exist"]
    assert ATTRIBUTES == ["local", "brokers", "controller_id", "cluster_id", "topics",
                          "topics_by_id", "listeners"]


@pytest.mark.parametrize("name", METHODS)
def test_both_stores_implement_each_method_with_its_signature(name):
    want = getattr(MetadataStore, name)
    for store in (LocalMetadataStore, ZkMetadataStore):
        got = getattr(store, name)
        assert inspect.signature(got).parameters == inspect.signature(want).parameters, store
        assert inspect.iscoroutinefunction(got) == inspect.iscoroutinefunction(want), store


def test_both_stores_hold_the_interface_attributes(tmp_path):
    for store in _stores(tmp_path):
        assert all(hasattr(store, a) for a in ATTRIBUTES), type(store).__name__
