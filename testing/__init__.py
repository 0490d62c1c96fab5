"""josefk.testing: a real Kafka broker for the tests of Python applications (docs/testing.md).

- ``broker(**properties)``: a broker in the test's own process (its own event-loop thread, an
  ephemeral port, a temporary log dir), ready in milliseconds;
- ``cluster(brokers=3, ...)``: ZooKeeper and several broker processes, with the faults of a
  real cluster (``kill``, ``restart``, ``pause``/``resume``, ``isolate``/``heal``);
- on any of their brokers, ``inject(api, error, count)`` and ``delay(api, ms)``: errors and
  slow answers for a client's retry code;
- the pytest plugin (``josefk.testing.plugin``, registered as ``pytest11``): fixtures
  ``josefk_broker``, ``josefk_topic`` and ``josefk_cluster``, and ``--kafka-bootstrap-servers``
  to run the same tests against another Kafka cluster.

It uses the broker (``josefk.broker``), the launcher of local clusters (``josefk.faults``) and
the tools' client; nothing of josefk imports it. Its names are imported on first use, so that
the pytest plugin costs a test run nothing until a fixture is used.
"""
import importlib

from josefk.testing.faults import Unavailable

_WHERE = {
    "broker": "josefk.testing.local",
    "EmbeddedBroker": "josefk.testing.local",
    "cluster": "josefk.testing.clusters",
    "Cluster": "josefk.testing.clusters",
    "ExternalCluster": "josefk.testing.external",
    "FaultError": "josefk.broker.injection",
}

__all__ = ["Cluster", "EmbeddedBroker", "ExternalCluster", "FaultError", "Unavailable", "broker",
           "cluster"]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'josefk.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
