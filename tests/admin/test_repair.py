"""`python -m app.admin repair-progress` on a real SQLite file: FSRS cards stored before the
progress import checked them (#25, finding 7), broken here with plain SQL, are found, reported
per user and mended; --dry-run changes nothing; the pages answer meanwhile."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.admin.__main__ import main
from app.admin.repair import repair_progress
from app.config import ROOT_DIR, Settings
from app.main import create_app
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
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data", content_dir=FIXTURE_CONTENT)


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
        with sqlite3.connect(settings.database_path) as conn:
            for item_id, change in BROKEN.items():
                (card,) = conn.execute(
                    "SELECT fsrs_card FROM itemstate WHERE user_id = 1 AND item_id = ?", (item_id,)
                ).fetchone()
                conn.execute(
                    "UPDATE itemstate SET fsrs_card = ? WHERE user_id = 1 AND item_id = ?",
                    (json.dumps({**json.loads(card), **change}), item_id),
                )
            (attempt_id, previous) = conn.execute(
                "SELECT id, previous_state FROM quizattempt WHERE user_id = 2 "
                "AND previous_state IS NOT NULL"
            ).fetchone()
            previous = json.loads(previous)
            previous["fsrs_card"].update(state=3, step=None)
            conn.execute(
                "UPDATE quizattempt SET previous_state = ? WHERE id = ?",
                (json.dumps(previous), attempt_id),
            )
        conn.close()
        yield client


def _stored(settings: Settings) -> dict[str, str]:
    """Every stored card as its raw text, by where it is kept."""
    with sqlite3.connect(settings.database_path) as conn:
        states = conn.execute("SELECT user_id, item_id, fsrs_card, due FROM itemstate").fetchall()
        previous = conn.execute(
            "SELECT id, previous_state FROM quizattempt WHERE previous_state IS NOT NULL"
        ).fetchall()
    conn.close()
    return {f"{u}:{i}": f"{card} {due}" for u, i, card, due in states} | {
        f"attempt {a}": p for a, p in previous
    }


def _cards(settings: Settings) -> dict[str, dict]:
    with sqlite3.connect(settings.database_path) as conn:
        rows = conn.execute("SELECT item_id, fsrs_card FROM itemstate WHERE user_id = 1")
        cards = {item_id: json.loads(card) for item_id, card in rows}
    conn.close()
    return cards


def _undo_card(settings: Settings) -> dict:
    with sqlite3.connect(settings.database_path) as conn:
        (previous,) = conn.execute(
            "SELECT previous_state FROM quizattempt WHERE previous_state IS NOT NULL"
        ).fetchone()
    conn.close()
    return json.loads(previous)["fsrs_card"]


def test_broken_cards_are_found_reported_and_mended(
    client: TestClient, settings: Settings, capsys
) -> None:
    broken = _cards(settings)
    for item_id in BROKEN:
        with pytest.raises(ValueError):
            checked_card(broken[item_id])
    # Before the repair the pages read such cards as repaired: they answer, where a naive
    # last_review, a negative stability or an unknown state made /, /progress and answering
    # fail with a 500, and the export failed its own check.
    log_in(client, "ada")
    for page in ("/", "/progress", "/quiz/browse", "/progress/export"):
        assert client.get(page).status_code == 200, page

    before = _stored(settings)
    assert main(["--data-dir", str(settings.data_dir), "repair-progress", "--dry-run"]) == 0
    dry_run = capsys.readouterr().out
    assert _stored(settings) == before
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

    mended = _cards(settings)
    for card in [*mended.values(), _undo_card(settings)]:
        checked_card(card)
    # A time without a zone was UTC; a bad step restarts the relearning steps; the rest keep
    # what they had.
    assert mended["fx-single"] == {
        **broken["fx-single"],
        "last_review": "2026-11-01T10:00:00+00:00",
    }
    assert mended["fx-generated"] == {**broken["fx-generated"], "step": 0}
    assert _undo_card(settings)["step"] == 0
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

    with sqlite3.connect(settings.database_path) as conn:
        conn.execute(
            "UPDATE itemstate SET fsrs_card = json_set(fsrs_card, '$.state', 2, "
            "'$.stability', NULL) WHERE user_id = 2"
        )
    conn.close()
    now = datetime(2026, 12, 1, tzinfo=UTC)
    with Session(client.app.state.engine) as session:
        mended = [m for m in repair_progress(session, now=now) if m.user_id == 2]
    assert mended[0].attempt_id is None and mended[0].fixes == [
        "the FSRS card's stability must be a positive number, not None: "
        "replaced by a new card, due now"
    ]
    with sqlite3.connect(settings.database_path) as conn:
        (due,) = conn.execute("SELECT due FROM itemstate WHERE user_id = 2").fetchone()
    conn.close()
    assert due.startswith("2026-12-01 00:00:00")
    assert answer(client, "fx-single", **RIGHT["fx-single"]).status_code == 200
