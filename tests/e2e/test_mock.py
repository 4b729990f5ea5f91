"""A mock interview in a real Chromium, on the fixture bank (issue #29): an answer is
acknowledged without a verdict, a question is skipped, the interview is ended early after a
second step, and the report says what became of each question."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from app.main import create_app
from tests.e2e.learner import register
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = make_settings(tmp_path_factory.mktemp("mock-e2e") / "data",
                             content_dir=FIXTURE_CONTENT)  # fmt: skip
    with serving(create_app(settings)) as url:
        yield url


def answer_right(page: Page) -> None:
    """Answers the fixture question on the page right (the report shows which)."""
    question = page.locator("#question")
    kind = question.get_attribute("data-kind")
    if kind == "single":
        question.get_by_label("Optimizer states").check()
    elif kind == "multiple":
        question.get_by_label("bf16").check()
        question.get_by_label("fp16").check()
    else:
        page.fill("input[name=answer]", "16" if kind == "numeric" else "16.64")
    page.locator(".answer-form button[type=submit]").first.click()


def test_answer_skip_end_early_then_the_report(page: Page, mock_server: str) -> None:
    register(page, mock_server)
    page.goto(f"{mock_server}/mock")
    page.fill("input[name=questions]", "4")
    page.fill("input[name=minutes]", "5")
    page.get_by_role("button", name="Start the interview").click()
    expect(page.locator("#mock-index")).to_have_text("1")

    answer_right(page)
    expect(page.locator("#mock-ack")).to_have_text("Answer 1 of 4 recorded — next question.")
    expect(page.locator("#mock-index")).to_have_text("2")
    expect(page.locator("#question")).not_to_contain_text("Correct")

    # Skip with the answer left blank: a required answer box does not hold it back.
    page.get_by_role("button", name="Skip this question").click()
    expect(page.locator("#mock-ack")).to_have_text("Question 2 of 4 skipped — next question.")
    expect(page.locator("#mock-index")).to_have_text("3")

    # Ending takes a second step, and says what it will do first.
    confirm = page.get_by_role("button", name="Yes, end now and see the report")
    expect(confirm).to_be_hidden()
    page.get_by_text("End the interview early…").click()
    expect(page.locator("#mock-end")).to_contain_text("2 in all, will count as not answered")
    confirm.click()

    expect(page.locator("h1")).to_have_text("Mock interview report")
    expect(page.locator("#mock-score")).to_contain_text("1 of 4 right (1 answered, 1 skipped)")
    expect(page.locator("#mock-unanswered")).to_have_text(
        "You ended the interview early: 2 questions were not answered."
    )
    outcomes = page.locator("#mock-questions tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.outcome)"
    )
    assert outcomes == ["right", "skipped", "unanswered", "unanswered"]
    expect(page.locator("tr[data-outcome=skipped] td.outcome")).to_have_text("skipped")
    expect(page.locator("tr[data-outcome=skipped] .question-time")).to_have_text(
        re.compile(r"^\d+ s$")
    )
