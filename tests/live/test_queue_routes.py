"""The demo line through the real routes: places per account and per address (issue #25,
"Demo lockout"), and the admin's cancel of a waiting and of a running run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio
import httpx
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import User
from app.live.models import DemoRun
from app.live.queue import SharedQueue
from app.live.queue_rules import Owner, QueueEntry
from tests.admin.test_admin_page import _make_admin
from tests.utils import one_slow_connection, refresh_csrf, register

SMALL_RUN = {"size_mib": 1, "iterations": 1}
# About 4 s on two CPU ranks: long enough to be cancelled while it runs.
LONG_RUN = {"size_mib": 64, "iterations": 20}


def browser_at(client: TestClient, address: str) -> TestClient:
    """Another browser, at client address `address`, on the same running app and event loop."""
    browser = TestClient(client.app, client=(address, 50000))
    browser.portal = client.portal
    refresh_csrf(browser)
    return browser


def waiting(queue: SharedQueue) -> int:
    return sum(not entry.running for entry in queue.store.line())


def wait_until(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@contextmanager
def worker_held(client: TestClient, address: str = "192.0.2.250") -> Iterator[QueueEntry]:
    """A run from `address` holds the worker (without running anything) until the block
    ends; it yields that run's entry."""
    queue: SharedQueue = client.app.state.demo_queue
    release = threading.Event()
    held: list[QueueEntry] = []

    async def hold() -> None:
        async with queue.place(Owner(f"user:held-{address}", address), "all_reduce", 1) as entry:
            held.append(entry)
            async for _ahead in queue.turns(entry):
                pass
            await anyio.to_thread.run_sync(release.wait)

    future = client.portal.start_task_soon(hold)
    try:
        wait_until(lambda: bool(held) and held[0].running)
        yield held[0]
    finally:
        release.set()
        future.result(10)


def start_stream(browser: TestClient, params: dict[str, float]) -> Callable[[], httpx.Response]:
    """Opens the all-reduce stream in a thread (TestClient answers a stream once it has
    ended); call what it returns for the response."""
    answers: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: answers.append(browser.get("/demos/all-reduce/stream", params=params)),
        daemon=True,
    )
    thread.start()

    def response() -> httpx.Response:
        thread.join(60)
        (answer,) = answers
        return answer

    return response


def user_id(client: TestClient, username: str) -> int:
    with Session(client.app.state.engine) as session:
        return session.exec(select(User).where(User.username == username)).one().id


def recorded_runs(client: TestClient, status: str) -> int:
    with Session(client.app.state.engine) as session:
        return len(session.exec(select(DemoRun).where(DemoRun.status == status)).all())


def test_accounts_from_one_address_no_longer_lock_everyone_out(app_client: TestClient) -> None:
    """The finding, through the routes: accounts behind one address each started a run and
    filled the line. Now the address holds two places; the third account is refused with
    the reason, and a visitor from another address still gets a place."""
    queue: SharedQueue = app_client.app.state.demo_queue
    accounts = [browser_at(app_client, "203.0.113.7") for _ in range(3)]
    for n, browser in enumerate(accounts):
        register(browser, f"sock{n}")
    visitor = browser_at(app_client, "198.51.100.23")
    with worker_held(app_client):
        first, second = (start_stream(browser, SMALL_RUN) for browser in accounts[:2])
        wait_until(lambda: waiting(queue) == 2)
        refused = accounts[2].get("/demos/all-reduce/stream", params=SMALL_RUN)
        assert refused.status_code == 503
        assert "2 demo runs from your address are already running or waiting" in refused.text
        assert accounts[2].get("/demos/all-reduce/run", params=SMALL_RUN).status_code == 503
        assert visitor.get("/demos/all-reduce/run", params=SMALL_RUN).status_code == 200
        owners = [entry.owner for entry in queue.store.line()]
        assert [o.address for o in owners] == ["192.0.2.250", "203.0.113.7", "203.0.113.7"]
        sockets = {user_id(app_client, "sock0"), user_id(app_client, "sock1")}
        assert {o.user_id for o in owners[1:]} == sockets
    for answer in (first(), second()):  # once the worker was free, both ran
        assert answer.status_code == 200
        assert "Queued: 1 run(s) ahead of this one" in answer.text and "Finished." in answer.text
    assert not queue.store.line()


def test_a_second_run_from_the_same_account_is_refused_from_any_address(
    app_client: TestClient,
) -> None:
    home, phone = browser_at(app_client, "192.0.2.31"), browser_at(app_client, "192.0.2.32")
    register(home, "ada-queue")
    phone.cookies = home.cookies
    refresh_csrf(phone)
    with worker_held(app_client):
        running = start_stream(home, SMALL_RUN)
        wait_until(lambda: waiting(app_client.app.state.demo_queue) == 1)
        for path in ("/demos/all-reduce/run", "/demos/all-reduce/stream"):
            response = phone.get(path, params=SMALL_RUN)
            assert response.status_code == 503 and "already have a demo running" in response.text
    assert "Finished." in running().text


def test_the_admin_cancels_a_waiting_run_and_its_page_says_so(app_client: TestClient) -> None:
    queue: SharedQueue = app_client.app.state.demo_queue
    admin, visitor = browser_at(app_client, "192.0.2.41"), browser_at(app_client, "192.0.2.42")
    register(admin, "root-waiting")
    _make_admin(admin, "root-waiting")
    with worker_held(app_client):
        stream = start_stream(visitor, SMALL_RUN)
        wait_until(lambda: waiting(queue) == 1)
        queued = queue.store.line()[1]
        page = admin.get("/admin").text
        assert f'<tr id="queued-{queued.id}">' in page and "<td>192.0.2.42</td>" in page
        listing = admin.post(f"/admin/queue/{queued.id}/cancel", headers={"HX-Request": "true"})
        assert listing.status_code == 200 and f'id="queued-{queued.id}"' not in listing.text
        answer = stream()  # ended while the worker is still held
    assert "cancelled by the admin" in answer.text and "Not started." in answer.text
    assert "Running on" not in answer.text


def test_the_admin_cancels_the_running_run_and_the_worker_goes_on(app_client: TestClient) -> None:
    queue: SharedQueue = app_client.app.state.demo_queue
    admin, visitor = browser_at(app_client, "192.0.2.51"), browser_at(app_client, "192.0.2.52")
    register(admin, "root-running")
    _make_admin(admin, "root-running")
    before = recorded_runs(app_client, "running")
    stream = start_stream(visitor, LONG_RUN)
    wait_until(lambda: recorded_runs(app_client, "running") > before)  # past the line
    started = time.monotonic()
    response = admin.post(f"/admin/queue/{queue.store.line()[0].id}/cancel", follow_redirects=False)
    assert response.status_code == 303
    answer = stream()
    assert time.monotonic() - started < 5
    assert "cancelled by the admin" in answer.text and "Cancelled." in answer.text
    assert "Finished." not in answer.text
    with Session(app_client.app.state.engine) as session:
        run = session.exec(select(DemoRun).order_by(DemoRun.created_at.desc())).first()
        assert (run.status, run.message) == ("cancelled", "cancelled by the admin")
    again = visitor.get("/demos/all-reduce/stream", params=SMALL_RUN)
    assert "Finished." in again.text  # the worker took the next job


def test_a_database_too_busy_while_a_run_waits_ends_its_stream_with_the_reason(
    app_client: TestClient,
) -> None:
    """Found with 500 learners on four web processes: a waiting run's look at the line found
    no pooled connection within the pool's timeout, after its stream had begun, so no 503
    could be sent and the server logged an unhandled error. The stream now says the site is
    busy, that the run did not start, and ends."""
    queue: SharedQueue = app_client.app.state.demo_queue
    visitor = browser_at(app_client, "192.0.2.61")
    with worker_held(app_client):
        stream = start_stream(visitor, SMALL_RUN)
        wait_until(lambda: waiting(queue) == 1)
        # The line's own engine swapped for a pool of one connection that waits 0.2 s, and
        # that connection held: the run's next look at the line gives up.
        store, engine = queue.store, queue.store.engine
        store.engine = one_slow_connection(engine.url)
        try:
            with store.engine.connect():
                answer = stream()
        finally:
            store.engine = engine
    assert answer.status_code == 200
    assert "very busy" in answer.text and "Not started." in answer.text
    assert answer.text.rstrip().endswith('event: done\ndata: "done"')
