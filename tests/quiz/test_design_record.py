"""The "design the run" answers through SQLite: recorded with the score the page showed,
listed on the progress page, carried by the progress export and import."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.quiz.models import DesignAttempt
from tests.utils import log_out, register

SCENARIO = 2  # Llama 3 70B on 64 H100s at 8K
SLOWER = {"scenario": str(SCENARIO), "dp": "4", "tp": "8", "pp": "2", "zero": "1"}
BROKEN = {"scenario": str(SCENARIO), "dp": "4", "tp": "16", "zero": "1"}


def _designs(client: TestClient, username: str) -> list[DesignAttempt]:
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        return list(
            session.exec(
                select(DesignAttempt)
                .where(DesignAttempt.user_id == user.id)
                .order_by(col(DesignAttempt.id))
            )
        )


def _shown_score(page: str) -> str:
    match = re.search(r'id="design-score">(\d+) / 100<', page)
    assert match, page[:2000]
    return match.group(1)


def _export(client: TestClient) -> dict:
    response = client.get("/progress/export")
    assert response.status_code == 200
    return response.json()


def _import(client: TestClient, data: dict, status: int = 200) -> str:
    response = client.post("/progress/import", files={"file": ("p.json", json.dumps(data))})
    assert response.status_code == status, response.text
    return response.text


def test_a_scored_design_is_stored_with_the_score_the_page_showed(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    shown = _shown_score(quiz_client.post("/mock/design", data=SLOWER).text)
    [row] = _designs(quiz_client, "ada")
    assert (row.scenario, row.verdict, row.rules) == (SCENARIO, "partial", [])
    assert f"{row.score * 100:.0f}" == shown and 0 < row.score < 1
    assert (row.layout["dp"], row.layout["tp"], row.layout["pp"], row.layout["zero"]) == (
        4, 8, 2, "1"
    )  # fmt: skip
    assert "scenario" not in row.layout
    quiz_client.post("/mock/design", data=BROKEN)
    broken = _designs(quiz_client, "ada")[1]
    assert (broken.score, broken.verdict) == (0.0, "breaks_rule")
    assert "tp_within_node" in broken.rules


def test_a_bad_form_is_not_recorded(quiz_client: TestClient) -> None:
    register(quiz_client)
    assert quiz_client.post("/mock/design", data={"scenario": "2", "dp": "0"}).status_code == 422
    assert _designs(quiz_client, "ada") == []


def test_the_progress_page_lists_design_answers_in_both_languages(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    assert 'id="designs"' not in quiz_client.get("/progress").text
    shown = _shown_score(quiz_client.post("/mock/design", data=SLOWER).text)
    [row] = _designs(quiz_client, "ada")
    # The UTC time, which the browser says in its own time zone (tests/e2e/test_quiz_flow.py).
    when = f'<td><time datetime="{row.created_at.isoformat()}" data-local="datetime">' + (
        f"{row.created_at.strftime('%Y-%m-%d %H:%M')} UTC</time></td>"
    )
    english = quiz_client.get("/progress?lang=en").text
    table = english[english.index('id="designs"') :]
    assert "<th>Scenario</th>" in table and ">Score</th>" in table
    assert when in table and "Llama 3 70B on 64 NVIDIA H100" in table
    assert f'href="/mock/design?scenario={SCENARIO}"' in table
    assert f'class="num design-score">{shown} / 100<' in table
    chinese = quiz_client.get("/progress?lang=zh").text
    table = chinese[chinese.index('id="designs"') - 200 :]
    assert "设计训练方案" in table and "<th>时间</th>" in table
    assert when in table and f'class="num design-score">{shown} / 100<' in table


def test_design_answers_round_trip_through_export_and_import_once(
    quiz_client: TestClient,
) -> None:
    register(quiz_client, "ada")
    quiz_client.post("/mock/design", data=SLOWER)
    quiz_client.post("/mock/design", data=BROKEN)
    exported = _export(quiz_client)
    assert [d["verdict"] for d in exported["designs"]] == ["partial", "breaks_rule"]
    log_out(quiz_client)
    register(quiz_client, "bob")
    designs = len(exported["designs"])
    assert f"{designs} design answers added" in _import(quiz_client, exported)
    assert "0 design answers added" in _import(quiz_client, exported)  # nothing twice
    assert _export(quiz_client)["designs"] == exported["designs"]
    bob = [
        (d.scenario, d.layout, d.score, d.verdict, d.rules) for d in _designs(quiz_client, "bob")
    ]
    ada = [
        (d.scenario, d.layout, d.score, d.verdict, d.rules) for d in _designs(quiz_client, "ada")
    ]
    assert bob == ada and len(bob) == 2


def test_files_without_design_answers_import_and_keep_them(quiz_client: TestClient) -> None:
    register(quiz_client)
    quiz_client.post("/mock/design", data=SLOWER)
    exported = _export(quiz_client)
    version_2 = {k: v for k, v in exported.items() if k != "designs"}
    version_1 = {k: v for k, v in version_2.items() if k != "goal"} | {"version": 1}
    for old in (version_2, version_1):
        assert "Imported" in _import(quiz_client, old)
    assert len(_designs(quiz_client, "ada")) == 1


def test_a_malformed_design_answer_is_a_422_and_changes_nothing(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    quiz_client.post("/mock/design", data=SLOWER)
    before = _export(quiz_client)
    [design] = before["designs"]
    later = {"created_at": "2030-01-01T00:00:00+00:00"}
    for bad, message in [
        ({**design, **later, "layout": {**design["layout"], "tp": 0}}, "layout.tp"),
        ({**design, **later, "scenario": 99}, "designs.1.scenario"),
        ({**design, **later, "score": 1.5}, "designs.1.score"),
        ({**design, **later, "verdict": "great"}, "designs.1.verdict"),
        ({**design, **later, "rules": ["be_nice"]}, "be_nice"),
        ({**design, "created_at": "2030-01-01T00:00:00"}, "designs.1.created_at"),
    ]:
        body = {**before, "designs": [design, bad]}
        text = _import(quiz_client, body, status=422)
        assert "nothing changed" in text and message in text, bad
    assert _export(quiz_client)["designs"] == before["designs"]
