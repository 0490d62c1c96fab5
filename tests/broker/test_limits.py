"""broker.limits.MemoryPool: Kafka's SimpleMemoryPool in non-strict mode."""
from josefk.broker.limits import MemoryPool


def test_non_strict_allocation_and_waiters():
    pool = MemoryPool(100)
    assert pool.try_allocate(80)
    assert pool.try_allocate(80)  # 20 left: still allowed, the pool dips below zero
    assert pool.available == -60
    assert not pool.try_allocate(1)
    woken = []
    pool.waiting.append(lambda: woken.append("a"))
    pool.waiting.append(lambda: woken.append("b"))
    pool.release(50)
    assert woken == [] and pool.available == -10
    pool.release(80)
    assert woken == ["a", "b"] and pool.available == 70


def test_unbounded_pool():
    pool = MemoryPool(-1)
    assert all(pool.try_allocate(1 << 30) for _ in range(100))
    pool.release(5)
    assert pool.available == -1
