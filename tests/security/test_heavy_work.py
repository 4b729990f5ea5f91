"""The bound on CPU-heavy requests (app/heavy_work.py): a few compute at once, the next waits
a while on the event loop, and then, or at once when the line is full, is told to come back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from app.heavy_work import HeavyWork, ServerBusy, held
from app.main import create_app
from tests.utils import csrf_token, make_settings

A, B = "192.0.2.1", "192.0.2.2"  # client addresses (RFC 5737)


def test_a_free_slot_is_taken_at_once_and_given_back_after_an_error() -> None:
    async def scenario() -> None:
        work = HeavyWork(slots=1, wait_s=0.2, max_waiting=1, per_address=2)
        with pytest.raises(RuntimeError):
            async with held(work, A):
                assert work.running == 1
                raise RuntimeError("the computation failed")
        assert work.running == 0
        async with held(work, A):  # the failed holder gave its slot back
            assert work.running == 1

    anyio.run(scenario)


def test_a_waiter_gets_the_slot_when_it_is_freed_in_time() -> None:
    async def scenario() -> list[str]:
        work = HeavyWork(slots=1, wait_s=2.0, max_waiting=1, per_address=2)
        order: list[str] = []

        async def first() -> None:
            async with held(work, A):
                await anyio.sleep(0.1)
                order.append("first done")

        async def second() -> None:
            await anyio.sleep(0.01)
            async with held(work, A):
                order.append("second ran")

        async with anyio.create_task_group() as group:
            group.start_soon(first)
            group.start_soon(second)
        return order

    assert anyio.run(scenario) == ["first done", "second ran"]


def test_a_waiter_past_its_wait_and_one_past_a_full_line_are_refused() -> None:
    async def scenario() -> list[float]:
        work = HeavyWork(slots=1, wait_s=0.1, max_waiting=1, per_address=2)
        refused: list[float] = []

        async def try_once(delay: float, address: str) -> None:
            await anyio.sleep(delay)
            start = anyio.current_time()
            try:
                async with held(work, address):
                    pass
            except ServerBusy as exc:
                assert exc.status_code == 503 and exc.headers["Retry-After"] == "1"
                refused.append(anyio.current_time() - start)

        async with held(work, A):
            async with anyio.create_task_group() as group:
                group.start_soon(try_once, 0.0, B)  # waits 0.1 s, then refused
                group.start_soon(try_once, 0.02, "192.0.2.3")  # the line is full: at once
        assert work.waiting == 0 and work.running == 0
        return sorted(refused)

    at_once, after_the_wait = anyio.run(scenario)
    assert at_once < 0.05
    assert 0.09 < after_the_wait < 0.5


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path / "data"))) as test_client:
        yield test_client


def _holding_every_slot(client: TestClient, name: str) -> HeavyWork:
    """The app's `name` bound with one slot, held by the test, and no place to wait."""
    work = client.portal.call(lambda: _made(slots=1, wait_s=0.05, max_waiting=0, per_address=2))
    setattr(client.app.state, name, work)  # type: ignore[attr-defined]
    client.portal.call(work.acquire, "192.0.2.99")
    return work


async def _made(**bounds: float) -> HeavyWork:
    return HeavyWork(**bounds)  # type: ignore[arg-type]


def test_the_planner_says_busy_while_every_heavy_slot_is_taken(client: TestClient) -> None:
    # Inputs no other test asks for, so the plan is not cached in this process already.
    unheard_of = {"preset": "llama3-8b", "nodes": 3, "seq_len": 2048}
    work = _holding_every_slot(client, "heavy_work")
    busy = client.get("/api/calc/planner", params=unheard_of)
    assert busy.status_code == 503
    assert busy.headers["Retry-After"] == "1"
    assert "busy" in busy.json()["detail"]
    assert client.post("/api/calc/planner", json=unheard_of).status_code == 503
    page = client.get("/calculators/planner", params=unheard_of)
    assert page.status_code == 503 and "busy" in page.text
    assert client.get("/cards").status_code == 200  # what computes little never waits
    client.portal.call(work.release, "192.0.2.99")
    assert client.get("/api/calc/planner", params=unheard_of).status_code == 200


def test_a_planner_query_already_answered_needs_no_slot(client: TestClient) -> None:
    asked = {"preset": "llama3-8b", "nodes": 5, "seq_len": 2048}
    assert client.get("/api/calc/planner", params=asked).status_code == 200
    work = _holding_every_slot(client, "heavy_work")
    # The plan is cached: the page, its fragment, a layout to explain and the API answer.
    assert client.get("/calculators/planner", params=asked).status_code == 200
    assert client.get("/calculators/planner/result", params={**asked, "tp": 2}).status_code == 200
    assert client.post("/api/calc/planner", json=asked).status_code == 200
    client.portal.call(work.release, "192.0.2.99")


def test_a_log_in_says_busy_while_every_hashing_slot_is_taken(client: TestClient) -> None:
    work = _holding_every_slot(client, "hashing")
    form = {"username": "ada", "password": "a-long-enough-password"}
    busy = client.post("/login", data={**form, "csrf_token": csrf_token(client)})
    assert busy.status_code == 503
    client.portal.call(work.release, "192.0.2.99")
    answered = client.post("/login", data={**form, "csrf_token": csrf_token(client)})
    assert answered.status_code == 422  # no such user: the hash ran, the answer came


def test_one_address_holds_at_most_its_share_of_places() -> None:
    async def scenario() -> None:
        work = HeavyWork(slots=2, wait_s=1.0, max_waiting=8, per_address=2)
        async with held(work, A), held(work, A):
            with pytest.raises(ServerBusy) as refused:
                async with held(work, A):
                    pass
            assert "still computing" in refused.value.detail
            with anyio.move_on_after(0.05):  # another address may wait for a slot
                async with held(work, B):
                    pass
        async with held(work, A):  # places given back
            assert work.running == 1

    anyio.run(scenario)


def test_a_freed_slot_goes_to_the_address_holding_fewest_places() -> None:
    async def scenario() -> list[str]:
        work = HeavyWork(slots=1, wait_s=2.0, max_waiting=8, per_address=2)
        order: list[str] = []

        async def ask(address: str, delay: float) -> None:
            await anyio.sleep(delay)
            async with held(work, address):
                order.append(address)
                await anyio.sleep(0.02)

        async with anyio.create_task_group() as group:
            group.start_soon(ask, A, 0.0)  # computes
            group.start_soon(ask, A, 0.01)  # A's second: waits
            group.start_soon(ask, B, 0.02)  # B's first, later, goes before it
        assert work.running == 0 and work.waiting == 0
        return order

    assert anyio.run(scenario) == [A, B, A]


def test_a_waiter_that_goes_away_leaves_no_slot_taken() -> None:
    async def scenario() -> None:
        work = HeavyWork(slots=1, wait_s=2.0, max_waiting=8, per_address=2)
        async with held(work, A):
            with anyio.move_on_after(0.05):  # B's request is cancelled while it waits
                async with held(work, B):
                    pass
            assert work.waiting == 0
        assert work.running == 0
        async with held(work, B):
            assert work.running == 1

    anyio.run(scenario)
