"""broker.eager: a handler coroutine runs inline until it first waits; only then is there a Task,
and that Task behaves as if it had run the coroutine from the start."""
import asyncio

import pytest

from josefk.broker import eager


def run(coro_fn):
    return asyncio.run(coro_fn())


def test_a_coroutine_that_never_waits_is_answered_inline_without_a_task():
    async def handler():
        return "answer"

    async def main():
        before = len(asyncio.all_tasks())
        result = eager.start(handler())
        assert result == "answer"
        assert len(asyncio.all_tasks()) == before
    run(main)


def test_an_exception_before_the_first_wait_propagates_to_the_caller():
    async def handler():
        raise ValueError("bad request")

    async def main():
        with pytest.raises(ValueError, match="bad request"):
            eager.start(handler())
    run(main)


def test_the_inline_step_runs_before_start_returns_and_a_task_finishes_the_rest():
    steps = []

    async def handler(fut):
        steps.append("before")
        value = await fut
        steps.append("after")
        await asyncio.sleep(0)  # a bare yield
        return value * 2

    async def main():
        fut = asyncio.get_running_loop().create_future()
        task = eager.start(handler(fut))
        assert isinstance(task, asyncio.Task)
        assert steps == ["before"]
        fut.set_result(21)
        assert await task == 42
        assert steps == ["before", "after"]
    run(main)


def test_the_coroutine_reads_the_exception_of_the_future_it_waits_on():
    async def handler(fut):
        try:
            await fut
        except KeyError as e:
            return f"handled {e.args[0]}"

    async def main():
        fut = asyncio.get_running_loop().create_future()
        task = eager.start(handler(fut))
        fut.set_exception(KeyError("missing"))
        assert await task == "handled missing"
    run(main)


def test_cancelling_the_task_cancels_the_awaited_future_and_reaches_the_coroutine():
    seen = []

    async def handler(fut):
        try:
            await fut
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        finally:
            seen.append("cleanup")

    async def main():
        fut = asyncio.get_running_loop().create_future()
        task = eager.start(handler(fut))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert fut.cancelled()
        assert seen == ["cancelled", "cleanup"]
    run(main)


def test_cancelling_while_the_awaited_future_cannot_be_cancelled_is_thrown_in():
    seen = []

    async def handler(fut):
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            seen.append("cancelled")
            return "gave up"

    async def main():
        fut = asyncio.get_running_loop().create_future()
        task = eager.start(handler(fut))
        await asyncio.sleep(0)
        task.cancel()
        assert await task == "gave up"
        assert not fut.cancelled() and seen == ["cancelled"]
    run(main)
