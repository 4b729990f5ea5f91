"""The admin page's demo queue (issue #25, "Demo lockout"): every run on a worker or waiting
for one, with who, from where, since when, at what estimated cost and on which worker, and a
Cancel for each."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
from fastapi.testclient import TestClient

from app.live.queue import QueueCancelled, SharedQueue
from app.live.queue_rules import Owner
from tests.admin.test_admin_page import _make_admin
from tests.live.test_queue_routes import wait_until
from tests.utils import log_out, register


@contextmanager
def line(client: TestClient, *places: tuple[Owner, str, float]) -> Iterator[list[object]]:
    """Each (owner, demo, cost) takes a place in the app's own line, in order, and keeps it
    until the block ends; the list holds what each place ended with (None, or the error).

    The first place takes the app's one worker as its turn would, without asking it (nothing
    listens there in these tests); the others wait for it, and close their pages at the end."""
    queue: SharedQueue = client.app.state.demo_queue
    workers = client.app.state.worker_pool.addresses
    release = threading.Event()
    endings: list[object] = []

    async def hold(owner: Owner, demo: str, cost_s: float, first: bool) -> None:
        try:
            async with queue.place(owner, demo, cost_s) as entry:
                if first:
                    assert await anyio.to_thread.run_sync(
                        queue.store.start, entry.id, workers[0], workers
                    )
                else:
                    async for _ahead in queue.turns(entry):
                        pass
                await anyio.to_thread.run_sync(release.wait)
            endings.append(None)
        except QueueCancelled as exc:
            endings.append(exc)

    futures = []
    for place in places:
        futures.append(client.portal.start_task_soon(hold, *place, not futures))
        joined = len(futures)
        wait_until(lambda joined=joined: len(queue.store.line()) == joined)  # in this order
    try:
        yield endings
    finally:
        for waiting in futures[1:]:
            waiting.cancel()
        release.set()
        futures[0].result(10)


def _admin(client: TestClient) -> int:
    register(client, "root")
    _make_admin(client, "root")
    return 1


def _row(page: str, entry_id: int) -> str:
    start = page.index(f'<tr id="queued-{entry_id}">')
    return page[start : page.index("</tr>", start)]


def test_the_admin_sees_each_run_in_the_line(client: TestClient) -> None:
    root = _admin(client)
    assert "No demo run is running or waiting." in client.get("/admin").text
    ada = Owner(f"user:{root}", "198.51.100.7", root)
    visitor = Owner("session:0123456789abcdef", "203.0.113.9")
    with line(client, (ada, "zero_stages", 21.7), (visitor, "all_reduce", 0.4)):
        page = client.get("/admin").text
    running, waiting = _row(page, 1), _row(page, 2)
    (worker,) = client.app.state.worker_pool.addresses
    for cell in ("zero_stages", "root", "198.51.100.7", "21.7 s", "running", worker):
        assert f"<td>{cell}</td>" in running, cell
    for cell in ("all_reduce", "anonymous", "203.0.113.9", "0.4 s", "waiting", ""):
        assert f"<td>{cell}</td>" in waiting, cell
    assert 'hx-post="/admin/queue/2/cancel"' in waiting and 'name="csrf_token"' in waiting
    assert page.index('<tr id="queued-1">') < page.index('<tr id="queued-2">')


def test_the_admin_cancels_a_waiting_run_with_htmx_and_the_running_one_by_form(
    client: TestClient,
) -> None:
    _admin(client)
    first, second = Owner("user:7", "198.51.100.7", 7), Owner("user:8", "198.51.100.8", 8)
    with line(client, (first, "all_reduce", 1), (second, "collectives", 3.9)) as endings:
        listing = client.post("/admin/queue/2/cancel", headers={"HX-Request": "true"})
        assert listing.status_code == 200 and listing.text.startswith('<div id="queue">')
        assert 'id="queued-2"' not in listing.text and 'id="queued-1"' in listing.text
        wait_until(lambda: len(endings) == 1)
        assert isinstance(endings[0], QueueCancelled)
        plain = client.post("/admin/queue/1/cancel", follow_redirects=False)
        assert plain.status_code == 303 and plain.headers["location"] == "/admin"
        # Marked until its stream stops the job and leaves; no second Cancel meanwhile.
        assert "<td>cancelling</td>" in (row := _row(client.get("/admin").text, 1))
        assert "/admin/queue/1/cancel" not in row
        assert client.post("/admin/queue/2/cancel").status_code == 404
    assert client.post("/admin/queue/1/cancel").status_code == 404  # gone with its run


@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_only_an_admin_cancels(client: TestClient, who: str) -> None:
    register(client, "ada")
    if who == "anonymous":
        log_out(client)
    with line(client, (Owner("user:9", "198.51.100.9", 9), "all_reduce", 1)) as endings:
        response = client.post("/admin/queue/1/cancel", follow_redirects=False)
        assert response.status_code == (303 if who == "anonymous" else 403)
        assert not endings and len(client.app.state.demo_queue.store.line()) == 1


def test_a_cancel_without_the_csrf_token_is_refused(client: TestClient) -> None:
    _admin(client)
    with line(client, (Owner("user:9", "198.51.100.9", 9), "all_reduce", 1)):
        del client.headers["X-CSRF-Token"]
        assert client.post("/admin/queue/1/cancel").status_code == 403
        assert not client.app.state.demo_queue.store.line()[0].cancelled
