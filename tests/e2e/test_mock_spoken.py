"""A spoken mock interview in a real Chromium (issue #27): free responses typed, set beside the
model answer and scored with the rubric, each opener followed by its follow-ups, and a report
that lists what was missed with links to the card's sections."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from app.config import ROOT_DIR
from app.quiz.bank import QuestionBank
from tests.e2e.learner import register

pytestmark = pytest.mark.browser


# The bank the shared live server (tests/e2e/conftest.py) serves: the real content.
BANK = QuestionBank.load(ROOT_DIR / "content" / "quiz")


def test_a_spoken_mock_with_follow_ups_end_to_end(page: Page, base_url: str) -> None:
    url, bank = base_url, BANK
    register(page, url)
    page.goto(f"{url}/mock")
    page.fill("input[name=questions]", "5")
    page.fill("input[name=minutes]", "30")
    page.select_option("select[name=topic]", "zero-stages")
    page.select_option("#mock-style", "spoken")
    page.get_by_role("button", name="Start the interview").click()

    asked: list[str] = []
    for number in range(1, 6):
        expect(page.locator("#mock-index")).to_have_text(str(number))
        item_id = page.locator("input[name=item_id]").get_attribute("value")
        assert item_id is not None
        item = bank.get(item_id)
        assert item is not None and item.kind == "free"
        asked.append(item_id)
        if getattr(item, "follows", None):
            expect(page.locator(".follow-up-of")).to_contain_text("Follow-up to:")
        expect(page.locator(".level-label")).not_to_be_empty()
        # The last answer says nothing: the report must then list every point it missed.
        said = item.model_answer if number < 5 else "I would have to look that up."
        page.fill("textarea[name=response]", said)
        page.get_by_role("button", name="Compare with the model answer").click()
        expect(page.locator("#free-comparison")).to_be_visible()
        expect(page.locator("#free-comparison .free-model")).not_to_be_empty()
        expect(page.locator("textarea[name=response]")).not_to_be_editable()
        boxes = page.locator("#rubric input[type=checkbox]")
        if number < 5:
            for i in range(boxes.count()):
                boxes.nth(i).check()
        page.get_by_role("button", name="Record answer").click()

    # Each opener with follow-ups was followed by them, in order.
    for index, item_id in enumerate(asked):
        follow_ups = [f.id for f in bank.follow_ups(bank.get(item_id))]
        if follow_ups:
            assert asked[index + 1 : index + 1 + len(follow_ups)] == follow_ups

    expect(page.locator("h1")).to_have_text("Mock interview report")
    outcomes = page.locator("#mock-questions tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.outcome)"
    )
    assert outcomes == ["right"] * 4 + ["wrong"]
    expect(page.locator("#mock-questions tbody tr").first).to_contain_text("100 %")
    missed = page.locator('#mock-missed li[data-number="5"] a')
    assert missed.count() == len(bank.get(asked[4]).rubric)  # type: ignore[union-attr]
    assert all(
        "/cards/zero-stages#" in (a or "")
        for a in missed.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    )
