"""Quota precedence (KIP-55), windowed rates and throttle times."""
from __future__ import annotations

import asyncio

import pytest

from josefk.broker.config import BrokerConfig
from josefk.broker.security.quotas import (CLIENT, DEFAULT, FETCH, PRODUCE, USER, LocalQuotaStore,
                                           QuotaManager, Rate, TimedCoroutine)


def manager(tmp_path, quotas, **props):
    m = QuotaManager(BrokerConfig({k.replace("_", "."): v for k, v in props.items()}),
                     LocalQuotaStore(str(tmp_path)))
    for entity, values in quotas.items():
        asyncio.run(m.alter(entity, values))
    return m


def test_precedence_most_specific_first(tmp_path):
    m = manager(tmp_path, {
        ((USER, "alice"), (CLIENT, "app")): {PRODUCE: 1.0},
        ((USER, "alice"),): {PRODUCE: 2.0, FETCH: 20.0},
        ((USER, DEFAULT),): {PRODUCE: 3.0},
        ((CLIENT, "app"),): {PRODUCE: 4.0},
        ((CLIENT, DEFAULT),): {PRODUCE: 5.0, FETCH: 50.0},
    })
    assert m.quota_for(PRODUCE, "alice", "app")[1] == 1.0
    assert m.quota_for(PRODUCE, "alice", "other")[1] == 2.0
    assert m.quota_for(FETCH, "alice", "app")[1] == 20.0
    assert m.quota_for(PRODUCE, "bob", "app")[1] == 3.0
    assert m.quota_for(FETCH, "bob", "x")[1] == 50.0
    # A default quota is applied per user: bob and carol each get their own sensor.
    assert m.quota_for(PRODUCE, "bob", "x")[0] != m.quota_for(PRODUCE, "carol", "x")[0]


def test_stored_quotas_reload_and_removal(tmp_path):
    m = manager(tmp_path, {((CLIENT, "app"),): {PRODUCE: 10.0}})
    again = manager(tmp_path, {})
    asyncio.run(again.reload())
    assert again.quotas == {((CLIENT, "app"),): {PRODUCE: 10.0}}
    asyncio.run(m.alter(((CLIENT, "app"),), {PRODUCE: None}))
    assert m.quotas == {} and m.quota_for(PRODUCE, "u", "app") is None


def test_rate_keeps_recent_windows_and_pads_short_history():
    r = Rate(samples=3, window_s=1.0)
    r.record(100, now=0.0)
    assert r.rate(0.1) == pytest.approx(100 / 2.1)  # padded to 2 full windows
    r.record(100, now=1.5)
    assert r.rate(2.0) == pytest.approx(200 / 2.0)
    r.record(50, now=10.0)  # the old windows are forgotten
    assert r.rate(10.0) == pytest.approx(50 / 2.0)


def test_throttle_time_brings_the_rate_back_to_the_quota(tmp_path):
    m = manager(tmp_path, {((CLIENT, "app"),): {PRODUCE: 1000.0}}, quota_window_num=2,
                quota_window_size_seconds=1)
    assert m.record(PRODUCE, "u", "app", 500) == 0
    throttle = m.record(PRODUCE, "u", "app", 2500)
    assert throttle == pytest.approx(2000, abs=50)  # 3000 B over ~1 s at 1000 B/s
    assert m.record(PRODUCE, "u", "other", 10**9) == 0  # no quota for that client


def test_timed_coroutine_counts_its_steps_not_its_waits():
    import time

    class Ctx:
        work_s = 0.0

    async def handler():
        time.sleep(0.02)  # work
        await asyncio.sleep(0.2)  # waiting: not counted
        time.sleep(0.02)
        return "answer"

    async def run(ctx):
        return await TimedCoroutine(handler(), ctx)

    ctx = Ctx()
    assert asyncio.run(run(ctx)) == "answer"
    assert 0.04 <= ctx.work_s < 0.15


def test_timed_coroutine_passes_exceptions_through():
    class Ctx:
        work_s = 0.0

    async def handler():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "cancelled cleanly"

    async def run():
        task = asyncio.ensure_future(TimedCoroutine(handler(), Ctx()))
        await asyncio.sleep(0.01)
        task.cancel()
        return await task

    assert asyncio.run(run()) == "cancelled cleanly"
