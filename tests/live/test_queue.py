"""The line in front of the worker: bounded, first come first served, one place per person."""

from __future__ import annotations

import asyncio

import pytest

from app.live.queue import JobQueue, QueueBusy


def test_runs_go_one_at_a_time_in_arrival_order() -> None:
    async def scenario() -> list[str]:
        queue = JobQueue(max_waiting=5)
        order: list[str] = []

        async def job(owner: str) -> None:
            async with queue.place(owner):
                order.append(f"{owner} starts")
                await asyncio.sleep(0.01)
                order.append(f"{owner} ends")

        await asyncio.gather(*(job(name) for name in ("a", "b", "c")))
        return order

    assert asyncio.run(scenario()) == [
        "a starts", "a ends", "b starts", "b ends", "c starts", "c ends",
    ]  # fmt: skip


def test_a_full_line_refuses_with_a_clear_message_and_reports_places_ahead() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=2)
        release = asyncio.Event()
        aheads: list[int] = []

        async def job(owner: str) -> None:
            async with queue.place(owner) as ahead:
                aheads.append(ahead)
                await release.wait()

        tasks = [asyncio.create_task(job(name)) for name in ("a", "b", "c")]
        await asyncio.sleep(0.01)
        assert queue.running and queue.waiting == 2
        with pytest.raises(QueueBusy, match="2 run\\(s\\) are already waiting"):
            queue.check("d")
        release.set()
        await asyncio.gather(*tasks)
        assert aheads == [0, 1, 2]
        assert not queue.running and queue.waiting == 0

    asyncio.run(scenario())


def test_one_person_holds_one_place() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=10)
        async with queue.place("ada"):
            with pytest.raises(QueueBusy, match="already have a demo running"):
                queue.check("ada")
            queue.check("bob")
        queue.check("ada")

    asyncio.run(scenario())


def test_a_waiter_that_leaves_gives_its_place_back() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=1)
        hold = asyncio.Event()

        async def first() -> None:
            async with queue.place("a"):
                await hold.wait()

        running = asyncio.create_task(first())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(queue.place("b").__aenter__())
        await asyncio.sleep(0.01)
        assert queue.waiting == 1
        waiter.cancel()  # the browser closed the page while queued
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert queue.waiting == 0
        queue.check("b")
        hold.set()
        await running

    asyncio.run(scenario())
