"""Mock interviews: questions drawn up front, answered without feedback, then a report of
strengths and gaps; another user's interview reads as missing."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

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
    assert re.search(r"<strong>\d of 4</strong> right \(4 answered\)", report)
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
    assert re.search(r"<strong>4 of 4</strong> right \(4 answered\)", report)
