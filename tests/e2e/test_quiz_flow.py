"""A learner's second pass through the quiz (issue #29), in a real Chromium on the real bank, at
1280×800 and on a phone (390×844): the question starts above the fold, the result of an answer
scrolls into sight and its verdict is read out, the topic filter folds into a line on the phone
and lists the cards by title, and times are said in the browser's time zone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, Page, expect

from app.main import create_app
from tests.e2e.learner import answer_any, register
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def real_bank_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app on the real cards and questions (long prompts), with no demo worker."""
    with serving(create_app(make_settings(tmp_path_factory.mktemp("quiz-flow") / "data"))) as url:
        yield url


@pytest.fixture
def learner(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A registered learner's page; the test's parameter is the viewport."""
    context = browser.new_context(viewport=request.param, timezone_id="Asia/Shanghai")
    page = context.new_page()
    register(page, request.getfixturevalue("real_bank_server"))
    yield page
    context.close()


def top_of(page: Page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return box["y"]  # from the top of the viewport


@pytest.mark.parametrize("learner", [PHONE, DESKTOP], indirect=True, ids=["390", "1280"])
def test_the_question_starts_above_the_fold_and_the_result_scrolls_into_sight(
    learner: Page, real_bank_server: str
) -> None:
    page, height = learner, learner.viewport_size["height"]  # type: ignore[index]
    page.goto(f"{real_bank_server}/quiz")
    # Nothing scrolled the page (an autofocused answer box used to, on a phone), and the
    # question's header and the start of its prompt are in sight.
    assert page.evaluate("window.scrollY") == 0
    assert 0 < top_of(page, "#question") and top_of(page, "#question .prompt") + 60 < height
    # On a phone the mode and topic filter is one line above it, which opens; wider, it is open.
    topic = page.locator("#quiz-filter select[name=topic]")
    summary = page.locator("#quiz-filter summary")
    if height == PHONE["height"]:
        expect(topic).to_be_hidden()
        expect(summary).to_have_text("Topic: All topics Change")
    else:
        expect(summary).to_be_hidden()
        expect(topic).to_be_visible()
    answer_any(page)
    verdict = page.locator("#result .verdict")
    expect(verdict).to_be_in_viewport(ratio=1)
    expect(page.locator("#next-question")).to_be_focused()
    # A screen reader hears the verdict from the status region.
    expect(page.locator("#quiz-status")).to_have_attribute("role", "status")
    expect(page.locator("#quiz-status")).to_contain_text("Recorded.")
    if height == PHONE["height"]:
        summary.click()
        expect(topic).to_be_visible()


@pytest.mark.parametrize("learner", [DESKTOP], indirect=True, ids=["1280"])
def test_the_topic_filter_lists_cards_by_title_then_tags(
    learner: Page, real_bank_server: str
) -> None:
    learner.goto(f"{real_bank_server}/quiz")
    select = learner.locator("select[name=topic]")
    expect(select.locator("optgroup")).to_have_count(2)
    assert [g.get_attribute("label") for g in select.locator("optgroup").all()] == ["Cards", "Tags"]
    cards = select.locator("optgroup").first.locator("option").all_inner_texts()
    assert cards[0] == "Memory anatomy of training: where every gigabyte on the GPU goes"
    assert not any(label.startswith("#") for label in cards)
    tags = select.locator("optgroup").last.locator("option").all_inner_texts()
    assert tags and all(label.startswith("#") for label in tags)
    assert select.locator("option").first.inner_text() == "All topics"
    # The question names its card by title, and links to it.
    card = learner.locator("#question a.question-card")
    expect(card).to_have_text(cards[0])
    expect(card).to_have_attribute("href", "/cards/memory-anatomy")


@pytest.mark.parametrize("learner", [PHONE], indirect=True, ids=["390"])
def test_the_next_review_is_said_in_the_browsers_time_zone(
    learner: Page, real_bank_server: str
) -> None:
    learner.goto(f"{real_bank_server}/quiz")
    answer_any(learner)
    due = learner.locator("#result time.next-due")
    iso = due.get_attribute("datetime")
    assert iso is not None and iso.endswith("+00:00")
    local = datetime.fromisoformat(iso).astimezone(ZoneInfo("Asia/Shanghai"))  # UTC+8
    expect(due).to_contain_text(f"{local:%H:%M}")
    expect(due).not_to_contain_text("UTC")
    expect(due).to_have_attribute("title", f"{datetime.fromisoformat(iso):%Y-%m-%d %H:%M} UTC")
