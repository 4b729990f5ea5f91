"""Undoing an answer in a real Chromium (#29): the learner answers, clicks Undo under the result,
and the same question (same item, same drawn numbers) is asked again, with no result below it,
ready to be answered again."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.main import create_app
from tests.e2e.learner import answer_any, register
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def real_bank_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on the real cards and questions, with no demo worker."""
    with serving(create_app(make_settings(tmp_path_factory.mktemp("quiz-undo") / "data"))) as url:
        yield url


@pytest.fixture
def learner(browser: Browser, real_bank_server: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    register(page, real_bank_server)
    yield page
    context.close()


def _asked(page: Page) -> tuple[str | None, dict[str, float], str]:
    """The question on the page: its item, its drawn inputs and its prompt's text."""
    question = page.locator("#question")
    item_id = question.locator("input[name=item_id]").get_attribute("value")
    inputs = {
        str(field.get_attribute("name")): float(field.get_attribute("value") or "nan")
        for field in question.locator("input[name^=in_]").all()
    }
    return item_id, inputs, question.locator(".prompt").inner_text()


def test_undo_asks_the_same_question_again(learner: Page, real_bank_server: str) -> None:
    page = learner
    page.goto(f"{real_bank_server}/quiz?mode=practice&topic=memory-anatomy")
    asked = _asked(page)
    assert asked[1], "the topic's first question should be a generated one, with drawn numbers"
    answer_any(page)
    undo = page.locator("#result #undo-answer button")
    expect(undo).to_have_text("Undo")
    undo.click()

    expect(page.locator("#question")).to_be_visible()
    assert _asked(page) == asked
    expect(page.locator("#quiz-result .recorded")).to_have_count(0)
    expect(page.locator("#quiz-filter select[name=mode]")).to_have_value("practice")
    # The recorded answer is gone, and the question takes a new one.
    answer_any(page)
    page.goto(f"{real_bank_server}/progress")
    expect(page.locator("#answer-count")).to_have_text(re.compile(r"^[01] of 1 correct$"))
