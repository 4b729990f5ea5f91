"""`python -m app.admin repair-progress` on a real database: FSRS cards stored before the
progress import checked them (#25, finding 7), broken here with plain UPDATEs, are found,
reported per user and mended; --dry-run changes nothing; the pages answer meanwhile."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, update
from sqlmodel import Session, col, select

from app.admin.__main__ import main
from app.admin.repair import repair_progress
from app.config import ROOT_DIR, Settings
from app.main import create_app
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.stored_cards import checked_card
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_in, log_out, make_settings, register

# How each of ada's items is broken, as a crafted import could have stored it.
BROKEN = {
    "fx-flash": {"state": 7},
    "fx-generated": {"state": 3, "step": 1.5},  # relearning
    "fx-multiple": {"difficulty": 11.5},
    "fx-numeric": {"stability": -3.0},
    "fx-single": {"last_review": "2026-11-01T10:00:00"},
}


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    settings = make_settings(tmp_path / "data", content_dir=FIXTURE_CONTENT)
    # The CLI finds the app's database as a container's does: in the environment.
    monkeypatch.setenv("SHARDLAB_DATABASE_URL", settings.database_url)
    return settings


def _engine(client: TestClient) -> Engine:
    return client.app.state.engine


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    """ada's five schedules broken as BROKEN says; bob's one schedule sound but the undo state
    of his second answer broken (a relearning card with no step)."""
    with TestClient(create_app(settings)) as client:
        register(client, "ada")
        for item_id in BROKEN:
            assert answer(client, item_id, **RIGHT[item_id]).status_code == 200
        log_out(client)
        register(client, "bob")
        for _ in range(2):
            assert answer(client, "fx-single", **RIGHT["fx-single"]).status_code == 200
        log_out(client)
        cards = _cards(client)
        with _engine(client).begin() as conn:
            for item_id, change in BROKEN.items():
                conn.execute(
                    update(ItemState)
                    .where(col(ItemState.user_id) == 1, col(ItemState.item_id) == item_id)
                    .values(fsrs_card={**cards[item_id], **change})
                )
            (attempt_id, previous) = conn.execute(
                select(QuizAttempt.id, QuizAttempt.previous_state).where(
                    QuizAttempt.user_id == 2, col(QuizAttempt.previous_state).is_not(None)
                )
            ).one()
            previous["fsrs_card"].update(state=3, step=None)
            conn.execute(
                update(QuizAttempt)
                .where(col(QuizAttempt.id) == attempt_id)
                .values(previous_state=previous)
            )
        yield client


def _stored(client: TestClient) -> dict[str, str]:
    """Every stored card as it is kept, by where it is kept."""
    with _engine(client).connect() as conn:
        states = conn.execute(
            select(ItemState.user_id, ItemState.item_id, ItemState.fsrs_card, ItemState.due)
        ).all()
        previous = conn.execute(
            select(QuizAttempt.id, QuizAttempt.previous_state).where(
                col(QuizAttempt.previous_state).is_not(None)
            )
        ).all()
    kept = {f"{u}:{i}": f"{json.dumps(card, sort_keys=True)} {due}" for u, i, card, due in states}
    return kept | {f"attempt {a}": json.dumps(p, sort_keys=True) for a, p in previous}


def _cards(client: TestClient) -> dict[str, dict]:
    with _engine(client).connect() as conn:
        rows = conn.execute(
            select(ItemState.item_id, ItemState.fsrs_card).where(ItemState.user_id == 1)
        )
        return dict(rows.all())


def _undo_card(client: TestClient) -> dict:
    with _engine(client).connect() as conn:
        previous = conn.execute(
            select(QuizAttempt.previous_state).where(col(QuizAttempt.previous_state).is_not(None))
        ).scalar_one()
    return previous["fsrs_card"]


def test_broken_cards_are_found_reported_and_mended(
    client: TestClient, settings: Settings, capsys
) -> None:
    broken = _cards(client)
    for item_id in BROKEN:
        with pytest.raises(ValueError):
            checked_card(broken[item_id])
    # Before the repair the pages read such cards as repaired: they answer, where a naive
    # last_review, a negative stability or an unknown state made /, /progress and answering
    # fail with a 500, and the export failed its own check.
    log_in(client, "ada")
    for page in ("/", "/progress", "/quiz/browse", "/progress/export"):
        assert client.get(page).status_code == 200, page

    before = _stored(client)
    assert main(["--data-dir", str(settings.data_dir), "repair-progress", "--dry-run"]) == 0
    dry_run = capsys.readouterr().out
    assert _stored(client) == before
    assert "ada (id 1): 5 card(s)\n" in dry_run and "bob (id 2): 1 card(s)\n" in dry_run
    assert "dry run: 6 card(s) of 2 user(s) would be repaired; nothing changed" in dry_run

    done = subprocess.run(
        [sys.executable, "-m", "app.admin", "--data-dir", str(settings.data_dir),
         "repair-progress"],
        cwd=ROOT_DIR, capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines == dry_run.splitlines()[:-1] + ["repaired 6 card(s) of 2 user(s)"]
    assert lines[:7] == [
        "ada (id 1): 5 card(s)",
        "  fx-flash (schedule): not an FSRS card (ValueError: 7 is not a valid State): "
        "replaced by a new card, due now",
        "  fx-generated (schedule): the FSRS card's step must be a whole number, 0 or more "
        "(null in review), not 1.5: set to 0",
        "  fx-multiple (schedule): the FSRS card's difficulty must be between 1 and 10, "
        "not 11.5: replaced by a new card, due now",
        "  fx-numeric (schedule): the FSRS card's stability must be a positive number, "
        "not -3.0: replaced by a new card, due now",
        "  fx-single (schedule): the FSRS card's last_review needs a time zone: read as UTC",
        "bob (id 2): 1 card(s)",
    ]
    assert lines[7].startswith("  fx-single (undo state of answer ")

    mended = _cards(client)
    for card in [*mended.values(), _undo_card(client)]:
        checked_card(card)
    # A time without a zone was UTC; a bad step restarts the relearning steps; the rest keep
    # what they had.
    assert mended["fx-single"] == {
        **broken["fx-single"],
        "last_review": "2026-11-01T10:00:00+00:00",
    }
    assert mended["fx-generated"] == {**broken["fx-generated"], "step": 0}
    assert _undo_card(client)["step"] == 0
    for item_id in ("fx-flash", "fx-multiple", "fx-numeric"):  # new cards, as never answered
        assert mended[item_id] | {"card_id": 0, "due": ""} == {
            "card_id": 0, "state": 1, "step": 0, "stability": None, "difficulty": None,
            "due": "", "last_review": None,
        }  # fmt: skip

    assert client.get("/progress").status_code == 200
    assert answer(client, "fx-numeric", **RIGHT["fx-numeric"]).status_code == 200
    with Session(client.app.state.engine) as session:
        assert repair_progress(session) == []


def test_a_card_in_review_without_stability_is_refused_by_the_import_and_mended(
    client: TestClient, settings: Settings
) -> None:
    # FSRS asserts that a card in review has a stability and a difficulty. Null passed the
    # import's first checks (a card still learning has none) and then failed every answer.
    log_in(client, "bob")
    exported = client.get("/progress/export").json()
    state = exported["states"][0]
    crafted = {**state, "fsrs_card": {**state["fsrs_card"], "state": 2, "stability": None}}
    body = json.dumps({**exported, "states": [crafted]})
    response = client.post("/progress/import", files={"file": ("p.json", body)})
    assert response.status_code == 422
    assert "stability must be a positive number" in response.text

    with _engine(client).begin() as conn:
        card = conn.execute(select(ItemState.fsrs_card).where(ItemState.user_id == 2)).scalar_one()
        conn.execute(
            update(ItemState)
            .where(col(ItemState.user_id) == 2)
            .values(fsrs_card={**card, "state": 2, "stability": None})
        )
    now = datetime(2026, 12, 1, tzinfo=UTC)
    with Session(client.app.state.engine) as session:
        mended = [m for m in repair_progress(session, now=now) if m.user_id == 2]
    assert mended[0].attempt_id is None and mended[0].fixes == [
        "the FSRS card's stability must be a positive number, not None: "
        "replaced by a new card, due now"
    ]
    with _engine(client).connect() as conn:
        due = conn.execute(select(ItemState.due).where(ItemState.user_id == 2)).scalar_one()
    assert due == now
    assert answer(client, "fx-single", **RIGHT["fx-single"]).status_code == 200
