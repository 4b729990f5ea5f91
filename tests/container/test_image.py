"""The real image, started by compose.yaml, does what docs/self-hosting.md promises.

Built from the repository's Dockerfile and run as the compose file says (published port,
named volume on /data, shm size, environment): healthy by its own HEALTHCHECK, the first admin
made with the documented `exec app python -m app.admin create-admin`, a quiz answer kept
across a restart, a demo measured on the container's own worker, uid 10001, data in the volume.
"""

from __future__ import annotations

import re
import time
from contextlib import closing

import httpx
import pytest

from tests.container.conftest import Stack

pytestmark = pytest.mark.container

ADMIN, PASSWORD = "alice", "study-group-pass"


def _logged_in(stack: Stack) -> httpx.Client:
    client = httpx.Client(base_url=stack.base_url, timeout=30)
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text)
    assert token, "no csrf_token on /login"
    response = client.post(
        "/login", data={"username": ADMIN, "password": PASSWORD, "csrf_token": token.group(1)}
    )
    assert response.status_code == 303, response.text
    # A new session after logging in: send its token with each request, as htmx does.
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").text)
    client.headers["X-CSRF-Token"] = token.group(1)
    return client


def _answer_the_shown_item(client: httpx.Client) -> str:
    """Answers whatever the review shows first with the form's own fields; returns its id."""
    page = client.get("/quiz").text
    form = page[page.index('name="item_id"') - 2000 :]
    fields = dict(re.findall(r'name="((?:item_id|in_[a-z_]+))" value="([^"]*)"', form))
    assert "item_id" in fields, page[:2000]
    fields["shown_at"] = str(int(time.time() * 1000))
    if 'name="answer"' in form:
        fields["answer"] = "1"
    else:
        fields["option"] = "0"
    response = client.post("/quiz/answer", data=fields, headers={"HX-Request": "true"})
    assert response.status_code == 200, response.text
    return fields["item_id"]


def test_the_healthcheck_reports_healthy_and_the_worker_is_up(stack: Stack) -> None:
    health = stack.inspect()["State"]["Health"]
    assert health["Status"] == "healthy" and health["Log"][-1]["ExitCode"] == 0
    deadline = time.monotonic() + 60
    while (
        "ok: 2 ranks (gloo)"
        not in (report := httpx.get(f"{stack.base_url}/healthz").json())["worker"]
    ):
        assert time.monotonic() < deadline, report
        time.sleep(1)
    assert report["database"] == "ok"


def test_it_runs_as_uid_10001_with_the_database_in_the_volume(stack: Stack) -> None:
    assert stack("exec", "-T", "app", "id", "-u").strip() == "10001"
    status = stack("exec", "-T", "app", "cat", "/proc/1/status")
    assert re.search(r"^Uid:\s+10001\s+10001", status, flags=re.M), status
    mounts = {m["Destination"]: m for m in stack.inspect()["Mounts"]}
    assert mounts["/data"]["Type"] == "volume"
    assert mounts["/data"]["Name"] == stack.env["DATA_VOLUME"]
    listing = stack("exec", "-T", "app", "ls", "-ln", "/data")
    assert re.search(r"\s10001\s+10001\s+\d+ .* shardlab\.db$", listing, flags=re.M), listing


def test_a_demo_runs_on_the_containers_own_worker(stack: Stack) -> None:
    response = httpx.get(
        f"{stack.base_url}/demos/all-reduce/stream",
        params={"size_mib": 1, "iterations": 2},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    # Each of 2 ranks sends and receives the ring's 2(N-1)/N of 1 MiB = 1 MiB per step.
    assert len(re.findall(r'<td class="num logical">1,048,576</td>', response.text)) == 4
    # The verdict: the logical bytes equal the prediction, and nothing differs unexplained.
    equal = (r'<tr data-status="equal"[^>]*>\s*(?:data:\s*)?'
             r'<th scope="row">Logical bytes sent per rank')  # fmt: skip
    assert re.search(equal, response.text), response.text
    assert 'data-status="unexpected"' not in response.text and "Finished." in response.text


def test_the_first_admin_answers_and_the_answer_survives_a_restart(stack: Stack) -> None:
    made = stack(
        "exec", "-T", "app", "python", "-m", "app.admin", "create-admin", ADMIN,
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert f"created admin {ADMIN}" in made
    with closing(_logged_in(stack)) as client:
        item_id = _answer_the_shown_item(client)
        before = client.get("/progress/export").json()["attempts"]
    assert [a["item_id"] for a in before] == [item_id]

    backup = stack("exec", "-T", "app", "python", "-m", "app.admin", "backup")
    assert re.search(r"backed up to /data/backups/\S+\.db .*integrity check ok", backup), backup

    stack("restart", "app", timeout_s=180)
    stack.wait_serving()
    with closing(_logged_in(stack)) as client:
        assert client.get("/progress/export").json()["attempts"] == before
