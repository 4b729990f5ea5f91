"""System-design rounds' pages through SQLite: the list, a round, a graded sheet recorded with
its round and terms, a bad sheet refused inline (422), and a visitor sent to log in."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.quiz.models import DesignAttempt
from tests.utils import csrf_token, register

ROUND = "llama3-8b-h100-pretrain"
SERVING = "llama3-8b-chat-h100"


def _model_answer_sheet(client: TestClient) -> dict[str, object]:
    """The sheet the model answer's figures fill in, read from the calculators the page uses."""
    from app.quiz.design_keys import round_figures

    round_ = client.app.state.design_rounds.get(ROUND)
    f = round_figures(round_)
    return {"dp": "8", "pp": "2", "zero": "1", "micro_batch": "2", "schedule": "interleaved",
            "virtual_stages": "4", "memory_gb": f["memory_gb"], "step_s": f["step_s"],
            "days": f["days"], "meets_deadline": "yes", "within_budget": "yes",
            "checkpoint_min": f["young_min"].replace(",", ""), "notes": "MFU, memory",
            "watch": ["0", "2"]}  # fmt: skip


def _attempts(client: TestClient) -> list[DesignAttempt]:
    with Session(client.app.state.engine) as session:
        return list(session.exec(select(DesignAttempt)))


def test_the_list_shows_every_round_with_its_kind_level_and_model(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    page = quiz_client.get("/mock/design/rounds")
    assert page.status_code == 200
    rounds = quiz_client.app.state.design_rounds.all()
    assert len(re.findall(r'<tr data-round="', page.text)) == len(rounds) >= 12
    assert (
        f'href="/mock/design/rounds/{ROUND}">Pre-train Llama 3 8B on two H100 nodes<' in page.text
    )
    assert 'data-kind="serving"' in page.text and "mixtral-8x7b" in page.text
    chinese = quiz_client.get("/mock/design/rounds?lang=zh").text
    assert "在两台 H100 节点上预训练 Llama 3 8B" in chinese and "训练" in chinese


def test_a_round_shows_its_brief_and_an_empty_sheet(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.get(f"/mock/design/rounds/{ROUND}").text
    assert "1,048,576" in page and 'name="checkpoint_min"' in page
    assert 'id="round-result"' not in page and 'id="round-next"' not in page
    assert 'href="/mock/design/rounds"' in quiz_client.get("/mock").text
    assert 'href="/mock/design/rounds"' in quiz_client.get("/mock/design").text
    assert quiz_client.get("/mock/design/rounds/no-such-round").status_code == 404


def test_a_graded_sheet_is_recorded_with_its_round_and_terms(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.post(f"/mock/design/rounds/{ROUND}", data=_model_answer_sheet(quiz_client))
    assert page.status_code == 200
    grades = dict(re.findall(r'data-term="(\w+)" data-grade="(\w+)"', page.text))
    assert grades == {"layout": "pass", "memory_gb": "pass", "step_s": "pass", "days": "pass",
                      "meets_deadline": "pass", "within_budget": "pass",
                      "checkpoint_min": "pass", "watch": "partial"}  # fmt: skip
    assert 'id="round-model-answer"' in page.text and 'id="round-next"' in page.text
    shown = re.search(r'id="round-score">(\d+) / 100<', page.text)
    assert shown is not None
    [row] = _attempts(quiz_client)
    assert (row.round_id, row.scenario, row.verdict, row.rules) == (ROUND, 0, "partial", [])
    assert f"{row.score * 100:.0f}" == shown.group(1) and 0.9 < row.score < 1
    assert (row.layout["dp"], row.layout["pp"], row.layout["zero"]) == (8, 2, "1")
    assert row.sheet is not None and row.sheet["answers"]["watch"] == [0, 2]
    assert [t["term"] for t in row.sheet["terms"]][:2] == ["layout", "memory_gb"]


def test_a_serving_sheet_is_recorded_without_a_layout(quiz_client: TestClient) -> None:
    register(quiz_client)
    sheet = {"tp": "3", "replicas": "2", "weights_gb": "16", "kv_gb": "34", "fits": "yes",
             "decode_ms": "15"}  # fmt: skip
    page = quiz_client.post(f"/mock/design/rounds/{SERVING}?lang=zh", data=sheet)
    assert page.status_code == 200 and 'data-verdict="breaks_rule"' in page.text
    # The calculator's reason (check_tensor_parallel), said in the reader's language.
    assert "attention heads" not in page.text and "32" in page.text
    [row] = _attempts(quiz_client)
    assert (row.round_id, row.layout, row.verdict) == (SERVING, {}, "breaks_rule")


def test_a_bad_sheet_is_a_422_naming_the_fields_and_not_recorded(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    bad = {**_model_answer_sheet(quiz_client), "dp": "0", "memory_gb": "lots",
           "step_s": "inf", "meets_deadline": "maybe", "watch": ["9"]}  # fmt: skip
    page = quiz_client.post(f"/mock/design/rounds/{ROUND}", data=bad)
    assert page.status_code == 422
    for message in ("DP: must be at least 1", "Memory per GPU (GB): must be a number",
                    "Step time (s): must be a finite number", "Meets the deadline:",
                    "What to watch:"):  # fmt: skip
        assert message in page.text, message
    assert 'name="memory_gb" type="number" step="any" min="0" value="lots"' in page.text
    assert _attempts(quiz_client) == []


def test_a_visitor_is_sent_to_log_in(quiz_client: TestClient) -> None:
    for method, url in [("GET", "/mock/design/rounds"), ("GET", f"/mock/design/rounds/{ROUND}"),
                        ("POST", f"/mock/design/rounds/{ROUND}")]:  # fmt: skip
        response = quiz_client.request(method, url, follow_redirects=False)
        assert response.status_code in (303, 403), (method, url)
    response = quiz_client.get(f"/mock/design/rounds/{ROUND}", follow_redirects=False)
    assert response.headers["location"].startswith("/login")
    assert _attempts(quiz_client) == []


def test_rounds_go_out_and_come_back_with_the_progress_file_and_show_by_title(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    quiz_client.post(f"/mock/design/rounds/{ROUND}", data=_model_answer_sheet(quiz_client))
    serving = {"tp": "1", "replicas": "8", "weights_gb": "16", "kv_gb": "10", "fits": "yes",
               "decode_ms": "5"}  # fmt: skip
    quiz_client.post(f"/mock/design/rounds/{SERVING}", data=serving)
    progress = quiz_client.get("/progress").text
    title = quiz_client.app.state.design_rounds.get(SERVING).title
    assert f'href="/mock/design/rounds/{SERVING}"' in progress and title in progress
    exported = quiz_client.get("/progress/export").content
    recorded = {(r.round_id, r.score) for r in _attempts(quiz_client)}
    quiz_client.post("/logout", data={"csrf_token": csrf_token(quiz_client)})
    register(quiz_client, "another")
    back = quiz_client.post("/progress/import", files={"file": ("progress.json", exported)})
    assert back.status_code == 200, back.text[:600]
    rows = _attempts(quiz_client)
    mine = [r for r in rows if r.user_id == max(a.user_id for a in rows)]
    assert {(r.round_id, r.score) for r in mine} == recorded
    assert all(r.sheet for r in mine)
