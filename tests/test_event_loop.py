"""A form that saves while another connection holds SQLite's write lock waits (busy_timeout)
in the thread pool, not on the event loop: other requests, the demos' event streams among
them, are answered meanwhile, and the save goes through once the lock is released."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, SQLModel, select

from app.config import Settings
from app.journey.models import StudyGoal
from app.main import create_app
from app.quiz.models import GroupMember, MockInterview, QuizAttempt, StudyGroup
from tests.quiz.conftest import FIXTURE_CONTENT, shown_item
from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_out, make_settings, register

# Long enough for the posted form to reach its write and start waiting on the lock; well
# under the 5 s busy_timeout, so the write still succeeds after the release.
REACH_LOCK_S = 0.5
# The home page answers in milliseconds when the loop is free (/healthz takes seconds in tests,
# waiting on a demo worker that is not there).
ANSWERED_WITHIN_S = 1.0

Post = tuple[str, dict[str, Any]]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data", content_dir=FIXTURE_CONTENT)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        register(test_client, "ada")
        yield test_client


def _now_ms() -> str:
    return str(int(time.time() * 1000))


def _quiz_answer(client: TestClient) -> Post:  # noqa: ARG001
    return "/quiz/answer", {"data": {"item_id": "fx-single", "shown_at": _now_ms(),
                                     **RIGHT["fx-single"]}}  # fmt: skip


def _mock_start(client: TestClient) -> Post:  # noqa: ARG001
    return "/mock", {"data": {"questions": "3", "minutes": "5"}}


def _mock_answer(client: TestClient) -> Post:
    started = client.post("/mock", data={"questions": "3", "minutes": "5"})
    item_id = shown_item(started.text)
    data = {"item_id": item_id, "index": "0", "shown_at": _now_ms(), **RIGHT[item_id]}
    return f"{started.url.path}/answer", {"data": data}


def _group_create(client: TestClient) -> Post:  # noqa: ARG001
    return "/groups", {"data": {"name": "Night owls"}}


def _group_join(client: TestClient) -> Post:
    client.post("/groups", data={"name": "Night owls"})
    with Session(client.app.state.engine) as session:
        code = session.exec(select(StudyGroup.invite_code)).one()
    log_out(client)
    register(client, "bob")
    return "/groups/join", {"data": {"invite_code": code}}


def _plan_set(client: TestClient) -> Post:  # noqa: ARG001
    interview = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
    return "/plan", {"data": {"interview_date": interview, "minutes_per_day": "30"}}


def _progress_import(client: TestClient) -> Post:
    answer(client, "fx-single", **RIGHT["fx-single"])
    exported = client.get("/progress/export").json()
    log_out(client)
    register(client, "bob")
    return "/progress/import", {"files": {"file": ("p.json", json.dumps(exported))}}


# Each form, and the table it adds one row to.
WRITES: dict[str, tuple[Callable[[TestClient], Post], type[SQLModel]]] = {
    "quiz answer": (_quiz_answer, QuizAttempt),
    "mock start": (_mock_start, MockInterview),
    "mock answer": (_mock_answer, QuizAttempt),
    "group create": (_group_create, StudyGroup),
    "group join": (_group_join, GroupMember),
    "plan set": (_plan_set, StudyGoal),
    "progress import": (_progress_import, QuizAttempt),
}


def _rows(client: TestClient, table: type[SQLModel]) -> int:
    with Session(client.app.state.engine) as session:
        return len(session.exec(select(table)).all())


@pytest.mark.parametrize("name", WRITES)
def test_a_save_waiting_on_a_locked_database_leaves_other_requests_answered(
    client: TestClient, settings: Settings, name: str
) -> None:
    prepare, table = WRITES[name]
    url, request = prepare(client)
    before = _rows(client, table)
    holder = sqlite3.connect(settings.database_path, isolation_level=None)
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            holder.execute("BEGIN IMMEDIATE")
            posted = pool.submit(client.post, url, **request)
            time.sleep(REACH_LOCK_S)
            home = pool.submit(client.get, "/")
            wait([home], timeout=ANSWERED_WITHIN_S)
            assert home.done(), f"the home page hung while the {name} waited on the lock"
            assert home.result().status_code == 200
            assert not posted.done(), "the save did not wait on the lock"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        response = posted.result(timeout=10)
    assert response.status_code == 200, response.text
    assert _rows(client, table) == before + 1
