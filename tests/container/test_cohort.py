"""compose.cohort.yaml, started for real, does what docs/self-hosting.md's "Cohort mode" says.

The app image (the same build as test_image.py's) and the PostgreSQL image from
deploy/postgres (Debian's postgresql-15 on the same base) run as the compose file says, with
two web processes and one demo worker service: /healthz names PostgreSQL and the worker; a
learner registers, answers, opens a card and runs a demo to its end, with requests served by
both processes; the admin is made with the documented `exec app python -m app.admin`; after
`backup` (pg_dump, in the app image) and then `down` and `up` (containers gone, volumes kept)
the answer is still there, in PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing

import httpx
import pytest

from app.config import ROOT_DIR
from tests.container import runtime
from tests.container.conftest import Stack
from tests.container.test_image import _answer_the_shown_item
from tests.utils import free_port

pytestmark = pytest.mark.container

POSTGRES_TAG = "shardlab-postgres:test"
PROJECT = "shardlab-cohort-test"
ADMIN, LEARNER, RETURNING, PASSWORD = "ada", "grace", "hopper", "cohort-pass-2026"
WEB_WORKERS = 2
# The first start makes the cluster (initdb, a few seconds), then each web process loads the
# content and runs the migrations in turn (one at a time, under PostgreSQL's advisory lock).
READY_WITHIN_S = 180


@pytest.fixture(scope="session")
def postgres_image(container_daemon: None, tmp_path_factory: pytest.TempPathFactory) -> str:
    """deploy/postgres built on the app's base image (the Debian stand-in where it is missing)."""
    for base in runtime.base_images(ROOT_DIR / "deploy" / "postgres" / "Dockerfile"):
        runtime.ensure_base_image(base, tmp_path_factory.mktemp("base"))
    runtime.build_image(POSTGRES_TAG, None, ROOT_DIR / "deploy" / "postgres")
    return POSTGRES_TAG


def _health(stack: Stack) -> dict:
    try:
        return httpx.get(f"{stack.base_url}/healthz", timeout=5).json()
    except (httpx.TransportError, ValueError):
        return {}


def _wait_until(stack: Stack, ready: Callable[[dict], bool], timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while not ready(report := _health(stack)):
        if time.monotonic() > deadline:
            logs = stack("logs", "--tail", "60", timeout_s=60)
            raise AssertionError(f"not ready in {timeout_s} s: {report}\n{logs[-6000:]}")
        time.sleep(1)
    return report


def _all_up(report: dict) -> bool:
    """The database answers and the one worker (2 gloo ranks) is reported up."""
    return (
        report.get("status") == "ok"
        and report.get("database") == "ok"
        and report.get("worker") == "ok: 2 ranks (gloo)"
    )


@pytest.fixture(scope="module")
def cohort(image: str, postgres_image: str) -> Iterator[Stack]:
    port = free_port()
    env = {
        **os.environ,
        "IMAGE": image,
        "POSTGRES_IMAGE": postgres_image,
        "PUBLISH": f"127.0.0.1:{port}",
        # Never the default volumes: a real cohort on this host keeps its data.
        "DATA_VOLUME": f"{PROJECT}-data",
        "POSTGRES_VOLUME": f"{PROJECT}-postgres",
        "SHARDLAB_SECRET_KEY": secrets.token_hex(32),
        "SHARDLAB_WORKER_TOKEN": secrets.token_hex(32),
        "POSTGRES_PASSWORD": secrets.token_hex(24),
        "WEB_WORKERS": str(WEB_WORKERS),
        # Two ranks: CI has two cores, and the demo's checks hold for any N.
        "WORKER_RANKS": "2",
    }
    stack = Stack(
        runtime.compose_command(),
        env,
        f"http://127.0.0.1:{port}",
        project=PROJECT,
        compose_file="compose.cohort.yaml",
    )
    stack("down", "--volumes", "--remove-orphans")  # what a killed earlier run left
    try:
        started = time.monotonic()
        stack("up", "--detach", "--no-build", timeout_s=300)
        _wait_until(stack, _all_up, READY_WITHIN_S)
        stack.healthy_after_s = time.monotonic() - started
        yield stack
    finally:
        stack("down", "--volumes", "--timeout", "20", timeout_s=180)


def _csrf(page: str) -> str:
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert token, page[:2000]
    return token.group(1)


def _signed_in(stack: Stack, path: str, fields: dict[str, str]) -> httpx.Client:
    """A client that posted `fields` to /register or /login and holds the session; every
    request on a new connection, so the web processes take turns at serving it."""
    client = httpx.Client(
        base_url=stack.base_url, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)
    )
    response = client.post(path, data={**fields, "csrf_token": _csrf(client.get(path).text)})
    assert response.status_code == 303, response.text
    # A new session after signing in: its token goes with each request, as htmx sends it.
    client.headers["X-CSRF-Token"] = _csrf(client.get("/login").text)
    return client


def _attempts(client: httpx.Client) -> list[dict]:
    response = client.get("/progress/export")
    assert response.status_code == 200, response.text
    return response.json()["attempts"]


def test_health_names_postgresql_and_the_worker_service(cohort: Stack) -> None:
    report = _health(cohort)
    assert _all_up(report), report
    assert report["database_kind"] == "postgresql", report
    assert report["workers"] == {"worker:29581": "ok: 2 ranks (gloo)"}, report
    # The database is PostgreSQL in its own container: no SQLite file appears in /data.
    listing = cohort("exec", "-T", "app", "ls", "/data")
    assert "shardlab.db" not in listing, listing
    processes = cohort("exec", "-T", "db", "sh", "-c", "cat /proc/1/cmdline | tr '\\0' ' '")
    assert processes.startswith("postgres -D /var/lib/postgresql/data"), processes


def test_a_learner_path_through_two_web_processes(cohort: Stack) -> None:
    made = cohort(
        "exec", "-T", "app", "python", "-m", "app.admin", "create-admin", ADMIN,
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert f"created admin {ADMIN}" in made
    with closing(_signed_in(cohort, "/login", {"username": ADMIN, "password": PASSWORD})) as admin:
        assert admin.get("/admin").status_code == 200
    client = _signed_in(cohort, "/register", {"username": LEARNER, "password": PASSWORD})
    with closing(client):
        item_id = _answer_the_shown_item(client)
        assert [a["item_id"] for a in _attempts(client)] == [item_id]
        card = client.get("/cards/zero-stages")
        assert card.status_code == 200 and "ZeRO" in card.text

        demo = client.get(
            "/demos/all-reduce/stream", params={"size_mib": 1, "iterations": 2}, timeout=120
        )
        assert demo.status_code == 200, demo.text
        # Each of 2 ranks sends the ring's 2(N-1)/N of 1 MiB = 1 MiB per step, 2 steps.
        assert len(re.findall(r'<td class="num logical">1,048,576</td>', demo.text)) == 4
        assert "Finished." in demo.text and "event: done" in demo.text
        assert 'data-status="unexpected"' not in demo.text

        # Twenty pages at once, each on its own connection: the session is honoured by
        # whichever process takes the request, and both take some.
        def progress_page(_: int) -> httpx.Response:
            return httpx.get(f"{cohort.base_url}/progress", cookies=client.cookies, timeout=60)

        with ThreadPoolExecutor(max_workers=10) as pool:
            responses = list(pool.map(progress_page, range(20)))
    assert [r.status_code for r in responses] == [200] * 20
    served_by = _processes_that_served(cohort, {r.headers["X-Request-ID"] for r in responses})
    assert len(served_by) == WEB_WORKERS, served_by


def _processes_that_served(stack: Stack, request_ids: set[str]) -> set[int]:
    """The `process` of each request line in the app's JSON log whose request_id is given."""
    processes = set()
    for line in stack("logs", "--no-color", "app", timeout_s=60).splitlines():
        _, _, payload = line.partition("| ")
        try:
            record = json.loads(payload or line)
        except ValueError:
            continue
        if record.get("request_id") in request_ids and "status" in record:
            processes.add(record["process"])
    return processes


def test_the_answer_survives_down_and_up_in_postgresql(cohort: Stack) -> None:
    fields = {"username": RETURNING, "password": PASSWORD}
    with closing(_signed_in(cohort, "/register", fields)) as client:
        item_id = _answer_the_shown_item(client)
        before = _attempts(client)
    assert [a["item_id"] for a in before] == [item_id]
    # The documented backup runs in the app's container: pg_dump is in the image.
    backup = cohort("exec", "-T", "app", "python", "-m", "app.admin", "backup", timeout_s=120)
    assert re.search(r"backed up to /data/backups/shardlab-\S+\.dump .*integrity check ok", backup)

    cohort("down", "--timeout", "20", timeout_s=180)  # containers and network gone; volumes kept
    cohort("up", "--detach", "--no-build", timeout_s=300)
    _wait_until(cohort, _all_up, READY_WITHIN_S)

    with closing(_signed_in(cohort, "/login", fields)) as client:
        assert _attempts(client) == before
    # And it is PostgreSQL that holds it, in the db service's volume.
    rows = cohort(
        "exec", "-T", "db", "psql", "--username=shardlab", "--dbname=shardlab", "--tuples-only",
        "--no-align", "--command",
        'SELECT a.item_id FROM quizattempt a JOIN "user" u ON u.id = a.user_id '
        f"WHERE u.username = '{RETURNING}'",
    )  # fmt: skip
    assert rows.split() == [item_id]
