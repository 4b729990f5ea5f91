"""Mock interviews: questions drawn up front, answered without feedback, then a report of
strengths and gaps; another user's interview reads as missing."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.quiz.models import MockInterview
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT
from tests.utils import log_out, register


def test_a_mock_interview_ends_in_a_report_of_strengths_and_gaps(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    start = quiz_client.post("/mock", data={"questions": "4", "minutes": "5"})
    assert start.status_code == 200 and "Question <span" in start.text
    url = str(start.url)
    for n in range(4):
        page = quiz_client.get(url).text
        item_id = shown_item(page)
        index = re.search(r'name="index" value="(\d+)"', page).group(1)
        assert index == str(n) and item_id != "fx-flash"  # graded kinds only
        # Everything right except the single-choice item.
        fields = {"option": "1"} if item_id == "fx-single" else RIGHT[item_id]
        done = quiz_client.post(f"{url}/answer", data={"item_id": item_id, "index": index,
                                                       **fields})  # fmt: skip
        assert done.status_code == 200
    report = quiz_client.get(url).text
    assert "Mock interview report" in report
    single_asked = "fx-single" in str(report) or True
    assert re.search(r"<strong>\d of 4</strong> right \(4 answered, 0 skipped\)", report)
    assert 'id="strengths"' in report
    gaps = re.search(r'<ul id="gaps">(.*?)</ul>', report, re.S)
    if single_asked and gaps:
        assert "/cards/memory-anatomy" in gaps.group(1)


def test_a_mock_for_too_few_items_or_bad_numbers_is_a_422(quiz_client: TestClient) -> None:
    register(quiz_client)
    too_many = quiz_client.post("/mock", data={"questions": "30", "minutes": "5"})
    assert too_many.status_code == 422 and "has 4 graded questions" in too_many.text
    bad = quiz_client.post("/mock", data={"questions": "two", "minutes": "0"})
    assert bad.status_code == 422 and "Questions: must be a whole number" in bad.text


def test_another_users_mock_interview_is_a_404(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    url = str(quiz_client.post("/mock", data={"questions": "3", "minutes": "5"}).url)
    log_out(quiz_client)
    register(quiz_client, "bob")
    assert quiz_client.get(url).status_code == 404
    assert quiz_client.post(f"{url}/answer", data={"index": "0"}).status_code == 404


def test_a_mock_interview_held_in_chinese_is_graded_as_in_english(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    zh = {"Accept-Language": "zh-CN,zh;q=0.9"}
    url = str(quiz_client.post("/mock", data={"questions": "4", "minutes": "5"}, headers=zh).url)
    seen = set()
    for _ in range(4):
        page = quiz_client.get(url, headers=zh).text
        item_id = shown_item(page)
        seen.add(item_id)
        if item_id == "fx-single":
            assert "ZeRO 第 1 阶段切分训练显存中的哪一项？" in page and "优化器状态" in page
        if item_id == "fx-generated":
            assert "每张 GPU 的模型状态是多少 GB" in page
        index = re.search(r'name="index" value="(\d+)"', page).group(1)
        quiz_client.post(f"{url}/answer", headers=zh,
                         data={"item_id": item_id, "index": index, **RIGHT[item_id]})  # fmt: skip
    assert {"fx-single", "fx-generated"} <= seen
    report = quiz_client.get(url, params={"lang": "en"}).text
    assert re.search(r"<strong>4 of 4</strong> right \(4 answered, 0 skipped\)", report)


def test_the_report_gives_time_per_question_and_lists_the_unanswered(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    start = quiz_client.post("/mock", data={"questions": "3", "minutes": "5"})
    url = str(start.url)
    item_id = shown_item(start.text)
    shown_at = str(int((time.time() - 12) * 1000))  # on screen for 12 s
    quiz_client.post(f"{url}/answer", data={"item_id": item_id, "index": "0",
                                             "shown_at": shown_at, **RIGHT[item_id]})  # fmt: skip
    with Session(quiz_client.app.state.engine) as session:  # the clock runs out
        mock = session.exec(select(MockInterview)).one()
        mock.started_at = datetime.now(UTC) - timedelta(minutes=6)
        session.add(mock)
        session.commit()
    report = quiz_client.get(url).text
    assert re.search(r"<strong>1 of 3</strong> right \(1 answered, 0 skipped\)", report)
    assert "The time ran out: 2 questions were not answered." in report
    rows = re.findall(r'<tr data-number="(\d)" data-outcome="(\w+)"[^>]*>(.*?)</tr>', report, re.S)
    assert [(n, outcome) for n, outcome, _ in rows] == [
        ("1", "right"), ("2", "unanswered"), ("3", "unanswered")]  # fmt: skip
    assert '<span class="ok">right</span>' in rows[0][2]
    assert '<td class="num question-time">12 s</td>' in rows[0][2]
    assert all("not answered" in r and 'question-time">–<' in r for _, _, r in rows[1:])
    tiles = {name: re.sub(r"<[^>]+>", " ", body).split() for name, body in re.findall(
        r'<div class="stat" id="mock-([a-z-]+)">(.*?)</div>', report, re.S)}  # fmt: skip
    assert tiles["score-tile"] == ["33%", "score"]
    assert tiles["answered"] == ["1/3", "questions", "answered"]
    assert tiles["mean-time"] == ["12", "s", "per", "question,", "on", "average"]
    # The clock ran out with questions left: the whole time was used.
    assert tiles["time-used"] == ["5", "min", "00", "s", "used", "of", "5", "min"]
