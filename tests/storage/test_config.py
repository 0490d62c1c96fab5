"""storage/config.py: a topic's log settings, Kafka's defaults and validation."""
import pytest

from josefk.storage import InvalidConfig, LogConfig


def test_log_config():
    c = LogConfig.from_props({})
    assert (c.segment_bytes, c.segment_ms, c.index_interval_bytes, c.retention_ms,
            c.retention_bytes, c.cleanup_policy, c.message_timestamp_type, c.max_message_bytes,
            c.flush_messages) == (1 << 30, 7 * 86400000, 4096, 604800000, -1, "delete",
                                  "CreateTime", 1048588, 2**63 - 1)
    base = LogConfig.from_props({"retention.ms": "1000", "segment.bytes": "2048"})
    c = LogConfig.from_props({"cleanup.policy": "compact,delete", "x.unknown": "1"}, base)
    assert c.retention_ms == 1000 and c.segment_bytes == 2048
    assert c.compact and c.delete
    assert c.props == {"cleanup.policy": "compact,delete", "x.unknown": "1"}
    for bad in ({"retention.ms": "soon"}, {"cleanup.policy": "shred"},
                {"message.timestamp.type": "Now"}, {"segment.bytes": str(1 << 40)}):
        with pytest.raises(InvalidConfig):
            LogConfig.from_props(bad)
