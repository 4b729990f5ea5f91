"""The line in front of the workers: bounded in places and in seconds, per account and per
address, taken round-robin by address, and open to the admin's cancel. Every rule through the
shared line on a real database (app/live/queue.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import anyio.to_thread
import pytest
from sqlalchemy import Engine

from app.live.job_cost import DEMO_COSTS, estimated_cost_s
from app.live.queue import QueueCancelled, SharedQueue
from app.live.queue_rules import Owner, QueueBusy, QueueEntry
from demos.specs import DEMO_PARAMS
from tests.live.line import TEST_POLL_S, WAIT_S, FreeWorkers, wait_for


def owner(account: str, address: str = "192.0.2.1") -> Owner:
    return Owner(f"user:{account}", address)


def line(engine: Engine, max_waiting: int, workers: int = 1, **limits: float) -> SharedQueue:
    pool = FreeWorkers([f"w{n}:1" for n in range(1, workers + 1)])
    return SharedQueue(engine, pool, max_waiting, poll_s=TEST_POLL_S, **limits)


async def hold(queue: SharedQueue, who: Owner, cost_s: float, release: asyncio.Event) -> None:
    """Takes a place, waits for the turn, then keeps its worker until `release`."""
    async with queue.place(who, "all_reduce", cost_s) as entry:
        async for _ahead in queue.turns(entry):
            pass
        await release.wait()


async def joined_in_order(queue: SharedQueue, *holds: tuple[Owner, float, asyncio.Event]) -> list:
    """Starts each hold once the one before it has its place, so they join in this order,
    and the first runs before the second joins."""
    tasks = []
    for n, (who, cost_s, release) in enumerate(holds, start=1):
        tasks.append(asyncio.create_task(hold(queue, who, cost_s, release)))
        await wait_for(queue, n, running=1 if n == 1 else None)
    return tasks


def test_runs_go_one_at_a_time_in_arrival_order(line_engine: Engine) -> None:
    async def scenario() -> list[str]:
        queue = line(line_engine, max_waiting=5)
        order: list[str] = []

        async def job(name: str) -> None:
            async with queue.place(owner(name, name), "x", 1) as entry:
                async for _ahead in queue.turns(entry):
                    pass
                order.append(f"{name} starts")
                await asyncio.sleep(0.3)  # long enough that the others join meanwhile
                order.append(f"{name} ends")

        tasks = []
        for n, name in enumerate(("a", "b", "c"), start=1):
            tasks.append(asyncio.create_task(job(name)))
            await wait_for(queue, n)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == [
        "a starts", "a ends", "b starts", "b ends", "c starts", "c ends",
    ]  # fmt: skip


def test_accounts_from_one_address_cannot_fill_the_line(line_engine: Engine) -> None:
    """Issue #25, "Demo lockout": nine accounts behind one address took every place (one
    each), and a visitor from anywhere else was told "busy" for 14 minutes."""

    async def scenario() -> None:
        queue = line(line_engine, max_waiting=8)
        release = asyncio.Event()
        taken = []
        for n in range(9):
            who = owner(f"sock{n}", "203.0.113.7")
            try:
                await queue.check(who, 94)
            except QueueBusy as exc:
                assert "2 demo runs from your address are already running or waiting" in str(exc)
                continue
            taken.append(asyncio.create_task(hold(queue, who, 20, release)))
            await wait_for(queue, len(taken), running=1)
        await wait_for(queue, 2, running=1)
        await queue.check(owner("visitor", "198.51.100.4"), 20)  # someone else still gets a place
        release.set()
        await asyncio.gather(*taken)

    asyncio.run(scenario())


def test_an_address_holds_at_most_its_seconds_of_work_but_one_run_always_fits(
    line_engine: Engine,
) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=8, address_cost_s=120)
        release = asyncio.Event()
        await queue.check(owner("big"), 200)  # alone, a run over the cap still fits
        (first,) = await joined_in_order(queue, (owner("ada"), 95.4, release))
        with pytest.raises(QueueBusy, match="to about 126 s, over the 120 s one address may"):
            await queue.check(owner("bob"), 30)
        await queue.check(owner("bob"), 24)  # a small run still fits beside it
        await queue.check(owner("cyd", "198.51.100.4"), 30)  # other addresses are not charged
        release.set()
        await first

    asyncio.run(scenario())


def test_the_waiting_line_is_bounded_in_seconds_so_eight_long_runs_cannot_wait(
    line_engine: Engine,
) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=8, waiting_cost_s=300)
        release = asyncio.Event()
        tasks = []
        for n in range(8):
            who = owner(f"u{n}", f"198.51.100.{n}")
            try:
                await queue.check(who, 94)
            except QueueBusy as exc:
                assert "about 282 s of runs are already waiting" in str(exc)
                continue
            tasks.append(asyncio.create_task(hold(queue, who, 94, release)))
            await wait_for(queue, len(tasks), running=1)
        await wait_for(queue, 4, running=1)  # 282 s wait, not 8 x 94 = 752 s
        await queue.check(owner("small", "198.51.100.99"), 18)  # a run that fits 300 s still can
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_the_check_and_the_join_refuse_alike(line_engine: Engine) -> None:
    """The stream joins without a check of its own: the join refuses with the same reason."""

    async def scenario() -> None:
        queue = line(line_engine, max_waiting=8)
        async with queue.place(owner("ada"), "x", 1):
            with pytest.raises(QueueBusy, match="already have a demo running"):
                async with queue.place(owner("ada", "198.51.100.9"), "x", 1):
                    pass
            assert len(await queue.entries()) == 1

    asyncio.run(scenario())


def test_a_full_line_refuses_with_a_clear_message_and_reports_places_ahead(
    line_engine: Engine,
) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=2)
        releases = {name: asyncio.Event() for name in "abc"}
        aheads: dict[str, list[int]] = {name: [] for name in "abc"}

        async def job(name: str) -> None:
            async with queue.place(owner(name, f"198.51.100.{ord(name)}"), "x", 1) as entry:
                async for ahead in queue.turns(entry):
                    aheads[name].append(ahead)
                await releases[name].wait()

        tasks = []
        for n, name in enumerate("abc", start=1):
            tasks.append(asyncio.create_task(job(name)))
            await wait_for(queue, n, running=1)
        await wait_for(queue, 3, running=1)
        with pytest.raises(QueueBusy, match="2 run\\(s\\) are already waiting"):
            await queue.check(owner("d", "198.51.100.1"), 1)
        for name in "ab":  # the line moves up one run at a time
            while aheads["c"][-1:] != [2 if name == "a" else 1]:
                await asyncio.sleep(0.01)
            releases[name].set()
        releases["c"].set()
        await asyncio.gather(*tasks)
        # Each waiter is told its place again as the line moves up.
        assert aheads == {"a": [], "b": [1], "c": [2, 1]}
        assert await queue.entries() == []

    asyncio.run(scenario())


def test_turns_go_round_robin_by_address(line_engine: Engine) -> None:
    """An address's second run waits behind the first runs of the others, even those that
    joined after it."""

    async def scenario() -> list[str]:
        queue = line(line_engine, max_waiting=8)
        releases = {name: asyncio.Event() for name in ("a1", "a2", "b1", "c1")}
        order: list[str] = []

        async def job(name: str, address: str) -> None:
            async with queue.place(owner(name, address), "x", 1) as entry:
                async for _ahead in queue.turns(entry):
                    pass
                order.append(name)
                await releases[name].wait()

        tasks = []
        for n, (name, address) in enumerate((("a1", "A"), ("a2", "A"), ("b1", "B"), ("c1", "C"))):
            tasks.append(asyncio.create_task(job(name, address)))
            await wait_for(queue, n + 1, running=1)
        assert [e.owner.account for e in await queue.entries()] == [
            "user:a1", "user:b1", "user:c1", "user:a2",
        ]  # fmt: skip
        for event in releases.values():
            event.set()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == ["a1", "b1", "c1", "a2"]


def test_an_address_that_ran_in_this_round_waits_for_the_next(line_engine: Engine) -> None:
    """The rounds outlive the runs: a1 ran in round 0, so a2, joining while b1 of round 0
    still runs, is behind c1, who joins after it."""

    async def scenario() -> list[str]:
        queue = line(line_engine, max_waiting=8)
        a1, b1 = asyncio.Event(), asyncio.Event()
        first, second = await joined_in_order(
            queue, (owner("a1", "A"), 1, a1), (owner("b1", "B"), 1, b1)
        )
        a1.set()
        await first
        await wait_for(queue, 1, running=1)  # b1 runs
        later = asyncio.Event()
        tasks = []
        for who in (owner("a2", "A"), owner("c1", "C")):
            tasks.append(asyncio.create_task(hold(queue, who, 1, later)))
            await wait_for(queue, len(tasks) + 1, running=1)
        order = [e.owner.account for e in await queue.entries()]
        b1.set()
        later.set()
        await asyncio.gather(second, *tasks)
        return order

    assert asyncio.run(scenario()) == ["user:b1", "user:c1", "user:a2"]


def test_one_account_holds_one_place(line_engine: Engine) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=10)
        async with queue.place(owner("ada"), "x", 1):
            with pytest.raises(QueueBusy, match="already have a demo running"):
                await queue.check(owner("ada", "198.51.100.9"), 1)  # from anywhere
            await queue.check(owner("bob"), 1)
        await queue.check(owner("ada"), 1)

    asyncio.run(scenario())


def test_a_waiter_that_leaves_gives_its_place_back(line_engine: Engine) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=1)
        release = asyncio.Event()
        running, waiter = await joined_in_order(
            queue, (owner("a", "A"), 1, release), (owner("b", "B"), 1, release)
        )
        await wait_for(queue, 2, running=1)
        waiter.cancel()  # the browser closed the page while queued
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert len(await queue.entries()) == 1
        await queue.check(owner("b", "B"), 1)
        release.set()
        await running

    asyncio.run(scenario())


def test_a_run_takes_its_turn_and_leaves_while_every_thread_of_the_pool_is_taken(
    line_engine: Engine,
) -> None:
    """Issue #31: on a saturated server the pages wait seconds for the thread pool. A stream's
    polls, its start and its leaving waited with them, and the worker stayed taken until its
    run's leaving came through: they run on the line's own threads."""

    async def scenario() -> None:
        queue = line(line_engine, max_waiting=5)
        joined, pool_taken = asyncio.Event(), asyncio.Event()

        async def run_to_its_end() -> QueueEntry:
            async with queue.place(owner("a"), "x", 1) as entry:  # a request: the pool's turn
                joined.set()
                await pool_taken.wait()
                async for _ahead in queue.turns(entry):
                    pass
                return entry

        stream = asyncio.create_task(run_to_its_end())
        await joined.wait()
        limiter = anyio.to_thread.current_default_thread_limiter()
        tokens, limiter.total_tokens = limiter.total_tokens, 1
        release = threading.Event()
        page = asyncio.create_task(anyio.to_thread.run_sync(release.wait))
        try:
            while limiter.borrowed_tokens < 1:  # the pool's one thread is the page's
                await asyncio.sleep(0.01)
            pool_taken.set()
            finished, _ = await asyncio.wait({stream}, timeout=WAIT_S)
            assert finished, "the run waited for the thread pool's one thread"
            assert stream.result().running and queue.store.line() == []
        finally:
            release.set()
            await page
            limiter.total_tokens = tokens
            await asyncio.gather(stream, return_exceptions=True)

    asyncio.run(scenario())


def test_the_admin_cancels_a_waiting_run_and_the_line_moves_on(line_engine: Engine) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=5)
        release = asyncio.Event()
        running, cancelled, behind = await joined_in_order(
            queue, *((owner(name, name), 1, release) for name in "abc")
        )
        b_id = (await queue.entries())[1].id
        assert await queue.cancel(b_id) is not None
        # Out of the line at once, before its waiter has seen it.
        assert [e.owner.account for e in await queue.entries()] == ["user:a", "user:c"]
        with pytest.raises(QueueCancelled):
            await cancelled
        assert await queue.cancel(b_id) is None  # gone: a second click finds nothing
        release.set()
        await asyncio.gather(running, behind)

    asyncio.run(scenario())


def test_cancelling_the_running_run_stops_its_events_within_a_poll_and_closes_them(
    line_engine: Engine,
) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=5)
        closed = asyncio.Event()

        async def stuck_job() -> AsyncIterator[str]:
            try:
                yield "accepted"
                await asyncio.sleep(3600)  # a rank hung between two measurements
                yield "never"
            finally:
                closed.set()

        received: list[str] = []
        held: list[QueueEntry] = []

        async def run() -> None:
            async with queue.place(owner("a"), "x", 1) as entry:
                held.append(entry)
                async for _ahead in queue.turns(entry):
                    pass
                events = stuck_job()
                async for event in queue.until_cancelled(entry, events):
                    received.append(event)
                await events.aclose()

        task = asyncio.create_task(run())
        await wait_for(queue, 1, running=1)
        while not received:
            await asyncio.sleep(0.01)
        await queue.cancel(held[0].id)
        await asyncio.wait_for(task, 1)
        assert closed.is_set() and received == ["accepted"] and held[0].cancelled
        assert await queue.entries() == []

    asyncio.run(scenario())


def test_a_pool_runs_one_job_per_free_worker_and_the_next_waits(line_engine: Engine) -> None:
    async def scenario() -> None:
        queue = line(line_engine, max_waiting=5, workers=2)
        first, second, third = (asyncio.Event() for _ in range(3))
        tasks = await joined_in_order(
            queue, (owner("a", "a"), 1, first), (owner("b", "b"), 1, second),
            (owner("c", "c"), 1, third),
        )  # fmt: skip
        await wait_for(queue, 3, running=2)
        entries = await queue.entries()
        assert [(e.owner.account, e.worker) for e in entries] == [
            ("user:a", "w1:1"), ("user:b", "w2:1"), ("user:c", None),
        ]  # fmt: skip
        second.set()  # b's worker is free: c takes it
        await wait_for(queue, 2, running=2)
        assert {e.owner.account: e.worker for e in await queue.entries()} == {
            "user:a": "w1:1", "user:c": "w2:1",
        }  # fmt: skip
        first.set()
        third.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_a_waiter_whose_place_was_dropped_is_told_to_run_again(line_engine: Engine) -> None:
    """A process too slow to renew its places for the stale bound loses them to the others;
    its waiter then says so instead of waiting for ever."""

    async def scenario() -> None:
        queue = line(line_engine, max_waiting=5)
        release = asyncio.Event()
        running, waiter = await joined_in_order(
            queue, (owner("a", "A"), 1, release), (owner("b", "B"), 1, release)
        )
        queue.store.leave((await queue.entries())[1].id)  # as the others would drop it
        with pytest.raises(QueueBusy, match="lost its place in the line"):
            await waiter
        release.set()
        await running

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
    # 6 steps took 27.4 s on the box that measured the table (app/live/job_cost.py).
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
