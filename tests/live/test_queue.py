"""The line in front of the worker: bounded in places and in seconds, per account and per
address, taken round-robin by address, and open to the admin's cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from app.live.job_cost import DEMO_COSTS, estimated_cost_s
from app.live.queue import (
    JobQueue,
    Owner,
    QueueBusy,
    QueueCancelled,
    QueueEntry,
    until_cancelled,
)
from demos.specs import DEMO_PARAMS


def owner(account: str, address: str = "192.0.2.1") -> Owner:
    return Owner(f"user:{account}", address)


async def hold(queue: JobQueue, who: Owner, cost_s: float, release: asyncio.Event) -> None:
    """Takes a place, waits for the turn, then keeps the worker until `release`."""
    async with queue.place(who, "all_reduce", cost_s) as entry:
        async for _ahead in queue.turns(entry):
            pass
        await release.wait()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_runs_go_one_at_a_time_in_arrival_order() -> None:
    async def scenario() -> list[str]:
        queue = JobQueue(max_waiting=5)
        order: list[str] = []

        async def job(name: str) -> None:
            async with queue.place(owner(name, name), "x", 1) as entry:
                async for _ahead in queue.turns(entry):
                    pass
                order.append(f"{name} starts")
                await asyncio.sleep(0.01)
                order.append(f"{name} ends")

        await asyncio.gather(*(job(name) for name in ("a", "b", "c")))
        return order

    assert asyncio.run(scenario()) == [
        "a starts", "a ends", "b starts", "b ends", "c starts", "c ends",
    ]  # fmt: skip


def test_accounts_from_one_address_cannot_fill_the_line() -> None:
    """Issue #25, "Demo lockout": nine accounts behind one address took every place (one
    each), and a visitor from anywhere else was told "busy" for 14 minutes."""

    async def scenario() -> None:
        queue = JobQueue(max_waiting=8)
        release = asyncio.Event()
        taken = []
        for n in range(9):
            try:
                queue.check(owner(f"sock{n}", "203.0.113.7"), 94)
            except QueueBusy as exc:
                assert "2 demo runs from your address are already running or waiting" in str(exc)
                continue
            who = owner(f"sock{n}", "203.0.113.7")
            taken.append(asyncio.create_task(hold(queue, who, 20, release)))
            await settle()
        assert len(taken) == 2 and queue.running and queue.waiting == 1
        queue.check(owner("visitor", "198.51.100.4"), 20)  # someone else still gets a place
        release.set()
        await asyncio.gather(*taken)

    asyncio.run(scenario())


def test_an_address_holds_at_most_its_seconds_of_work_but_one_run_always_fits() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=8, address_cost_s=120)
        release = asyncio.Event()
        queue.check(owner("big"), 200)  # alone, a run over the cap still fits
        first = asyncio.create_task(hold(queue, owner("ada"), 95.4, release))
        await settle()
        with pytest.raises(QueueBusy, match="to about 126 s, over the 120 s one address may"):
            queue.check(owner("bob"), 30)
        queue.check(owner("bob"), 24)  # a small run still fits beside it
        queue.check(owner("cyd", "198.51.100.4"), 30)  # and other addresses are not charged
        release.set()
        await first

    asyncio.run(scenario())


def test_the_waiting_line_is_bounded_in_seconds_so_eight_long_runs_cannot_wait() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=8, waiting_cost_s=300)
        release = asyncio.Event()
        tasks = []
        for n in range(8):
            who = owner(f"u{n}", f"198.51.100.{n}")
            try:
                queue.check(who, 94)
            except QueueBusy as exc:
                assert "about 282 s of runs are already waiting" in str(exc)
                continue
            tasks.append(asyncio.create_task(hold(queue, who, 94, release)))
            await settle()
        assert queue.running and queue.waiting == 3  # 282 s wait, not 8 x 94 = 752 s
        queue.check(owner("small", "198.51.100.99"), 18)  # a run that fits the 300 s still can
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_a_full_line_refuses_with_a_clear_message_and_reports_places_ahead() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=2)
        release = asyncio.Event()
        aheads: dict[str, list[int]] = {}

        async def job(name: str) -> None:
            async with queue.place(owner(name, f"198.51.100.{ord(name)}"), "x", 1) as entry:
                aheads[name] = [ahead async for ahead in queue.turns(entry)]
                await release.wait()

        tasks = [asyncio.create_task(job(name)) for name in ("a", "b", "c")]
        await settle()
        assert queue.running and queue.waiting == 2
        with pytest.raises(QueueBusy, match="2 run\\(s\\) are already waiting"):
            queue.check(owner("d", "198.51.100.1"), 1)
        release.set()
        await asyncio.gather(*tasks)
        # Each waiter is told its place again as the line moves up.
        assert aheads == {"a": [], "b": [1], "c": [2, 1]}
        assert not queue.running and queue.waiting == 0

    asyncio.run(scenario())


def test_turns_go_round_robin_by_address() -> None:
    """An address's second run waits behind the first runs of the others, even those that
    joined after it."""

    async def scenario() -> list[str]:
        queue = JobQueue(max_waiting=8)
        release = asyncio.Event()
        order: list[str] = []

        async def job(name: str, address: str) -> None:
            async with queue.place(owner(name, address), "x", 1) as entry:
                async for _ahead in queue.turns(entry):
                    pass
                order.append(name)
                await release.wait()

        tasks = []
        for name, address in (("a1", "A"), ("a2", "A"), ("b1", "B"), ("c1", "C")):
            tasks.append(asyncio.create_task(job(name, address)))
            await settle()
        assert [e.owner.account for e in queue.entries] == [
            "user:a1", "user:b1", "user:c1", "user:a2",
        ]  # fmt: skip
        release.set()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["a1", "b1", "c1", "a2"]


def test_one_account_holds_one_place() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=10)
        async with queue.place(owner("ada"), "x", 1):
            with pytest.raises(QueueBusy, match="already have a demo running"):
                queue.check(owner("ada", "198.51.100.9"), 1)  # from anywhere
            queue.check(owner("bob"), 1)
        queue.check(owner("ada"), 1)

    asyncio.run(scenario())


def test_a_waiter_that_leaves_gives_its_place_back() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=1)
        release = asyncio.Event()
        running = asyncio.create_task(hold(queue, owner("a", "A"), 1, release))
        await settle()
        waiter = asyncio.create_task(hold(queue, owner("b", "B"), 1, release))
        await settle()
        assert queue.waiting == 1
        waiter.cancel()  # the browser closed the page while queued
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert queue.waiting == 0
        queue.check(owner("b", "B"), 1)
        release.set()
        await running

    asyncio.run(scenario())


def test_the_admin_cancels_a_waiting_run_and_the_line_moves_on() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=5)
        release = asyncio.Event()
        running = asyncio.create_task(hold(queue, owner("a", "A"), 1, release))
        await settle()
        cancelled = asyncio.create_task(hold(queue, owner("b", "B"), 1, release))
        behind = asyncio.create_task(hold(queue, owner("c", "C"), 1, release))
        await settle()
        b_id = queue.entries[1].id
        assert queue.cancel(b_id) is not None
        with pytest.raises(QueueCancelled):
            await cancelled
        assert [e.owner.account for e in queue.entries] == ["user:a", "user:c"]
        assert queue.cancel(b_id) is None  # gone: a second click finds nothing
        release.set()
        await asyncio.gather(running, behind)

    asyncio.run(scenario())


def test_cancelling_the_running_run_stops_its_events_at_once_and_closes_them() -> None:
    async def scenario() -> None:
        queue = JobQueue(max_waiting=5)
        closed = asyncio.Event()

        async def stuck_job() -> AsyncIterator[str]:
            try:
                yield "accepted"
                await asyncio.sleep(3600)  # a rank hung between two measurements
                yield "never"
            finally:
                closed.set()

        received: list[str] = []

        async def run() -> None:
            async with queue.place(owner("a"), "x", 1) as entry:
                events = stuck_job()
                async for event in until_cancelled(entry, events):
                    received.append(event)
                await events.aclose()

        task = asyncio.create_task(run())
        await settle()
        entry: QueueEntry = queue.entries[0]
        assert entry.running and received == ["accepted"]
        queue.cancel(entry.id)
        await asyncio.wait_for(task, 1)
        assert closed.is_set() and received == ["accepted"]
        assert not queue.entries

    asyncio.run(scenario())


def test_every_demo_has_a_cost_exact_at_its_measured_points() -> None:
    assert sorted(DEMO_COSTS) == sorted(DEMO_PARAMS)
    for demo, cost in DEMO_COSTS.items():
        spec = DEMO_PARAMS[demo]
        assert estimated_cost_s(demo, spec()) == pytest.approx(cost.at_defaults_s), demo
        bounds = spec.model_validate(cost.bounds)
        assert estimated_cost_s(demo, bounds) == pytest.approx(cost.at_bounds_s), demo


def test_costs_grow_with_the_work_and_stay_within_the_slowest_measured_run() -> None:
    zero = DEMO_PARAMS["zero_stages"]
    # 6 steps took 27.4 s on the box that measured the table (app/live/queue.py).
    assert estimated_cost_s("zero_stages", zero(steps=6)) == pytest.approx(26.7, abs=0.05)
    # A tiny model still pays the strategies' start-up (5.7 s measured, 7.7 charged).
    tiny = zero(width=16, layers=1, vocab=8, seq_len=4, batch=1)
    assert 7.7 < estimated_cost_s("zero_stages", tiny) < 9
    # Scale 8 only runs on CUDA ranks; never charged beyond the CPU bounds' 95.4 s.
    assert estimated_cost_s("zero_stages", zero(model_scale=8)) <= 95.4
    all_reduce = DEMO_PARAMS["all_reduce"]
    small, large = all_reduce(size_mib=1, iterations=1), all_reduce(size_mib=32, iterations=10)
    assert (
        0.1 <= estimated_cost_s("all_reduce", small) < 0.4 < estimated_cost_s("all_reduce", large)
    )
