"""The ``connect`` protocol type's member metadata (JoinGroup) and assignment (SyncGroup), as
Kafka Connect's ConnectProtocol (``default``, eager, version 0) and
IncrementalCooperativeConnectProtocol (``compatible``, version 1; ``sessioned``, version 2)
write them: an INT16 version, then the fields.

In an assignment, a connector's entry lists its task ids, and ``CONNECTOR_TASK`` (-1) when the
connector itself is assigned. A version 1/2 member's metadata carries its previous assignment
(``allocation``: a whole serialized ASSIGNMENT, or null when it had none)."""
from josefk.wire.schema import BYTES, INT16, INT32, INT64, STRING, Array, Data, Field

CONNECTOR_TASK = -1
NO_ERROR, CONFIG_MISMATCH = 0, 1
# connect.protocol -> (sub-protocol name, version)
SUB_PROTOCOLS = {"eager": ("default", 0), "compatible": ("compatible", 1),
                 "sessioned": ("sessioned", 2)}

WORKER_METADATA = Data("ConnectProtocolWorkerState", "0-2", [
    Field("url", STRING),
    Field("config_offset", INT64),
    Field("allocation", BYTES, "1+", nullable="1+", default=None),
])

_CONNECTOR_ASSIGNMENT = [
    Field("connector", STRING),
    Field("tasks", Array(INT32)),
]

ASSIGNMENT = Data("ConnectProtocolAssignment", "0-2", [
    Field("error", INT16),
    Field("leader", STRING),
    Field("leader_url", STRING),
    Field("config_offset", INT64),
    Field("assignment", _CONNECTOR_ASSIGNMENT, nullable="1+", struct="ConnectorAssignment"),
    Field("revoked", _CONNECTOR_ASSIGNMENT, "1+", nullable="1+", default=None,
          struct="ConnectorAssignment"),
    Field("scheduled_delay", INT32, "1+", default=0),
])
