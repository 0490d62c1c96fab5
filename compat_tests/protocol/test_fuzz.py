"""A bounded request fuzz against a real broker over real sockets (issue 11, defect 6).

Generated and mutated requests of every API and version (testkit/fuzzer.py), about
2,000 per API. Afterwards: the broker process is alive, no handler failed or raised (its log
has no traceback), no connection hung, it still answers ApiVersions, and a real
confluent-kafka producer and consumer still work. ``scripts/fuzz.py`` is the long run.
"""
from __future__ import annotations

import pytest

from testkit.fuzzer import BROKER_OVERRIDES, FuzzRun, check_broker_log
from compat_tests.helpers import create_topic, roundtrip_check, unique_topic
from josefk.wire.apis import API_BY_KEY

pytestmark = pytest.mark.timeout(300)

INPUTS_PER_API = 2000


def test_fuzzed_requests_never_break_the_broker(broker_factory):
    b = broker_factory({"auto.create.topics.enable": "true", "num.partitions": 2,
                        **BROKER_OVERRIDES})
    topics = [create_topic(b.bootstrap, unique_topic("fuzz"), 2) for _ in range(2)]
    health = create_topic(b.bootstrap, unique_topic("health"), 1)
    run = FuzzRun(b.bootstrap, seed=11, topics=topics, groups=["fuzz-g1", "fuzz-g2"])
    seconds = run.run(INPUTS_PER_API * len(API_BY_KEY), max_seconds=200)
    print(run.summary(seconds))
    assert not run.hangs
    assert run.sent >= INPUTS_PER_API * len(API_BY_KEY)
    assert len(run.per_api) == sum(a.max_version - a.min_version + 1
                                   for a in API_BY_KEY.values())
    assert b.is_running()
    roundtrip_check(b.bootstrap, health)
    assert check_broker_log(b.log_path.read_text(errors="replace")) == []
