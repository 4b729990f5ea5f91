"""The quiz in a real Chromium, on the fixture bank (one item of each kind): a review session,
a mock interview, and a group page that shows the members who opted in."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.main import create_app
from tests.e2e.learner import register
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def quiz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = make_settings(tmp_path_factory.mktemp("quiz-e2e") / "data",
                             content_dir=FIXTURE_CONTENT)  # fmt: skip
    with serving(create_app(settings)) as url:
        yield url


def answer_current(page: Page) -> str:
    """Answers whatever the review shows, right, and returns its kind."""
    question = page.locator("#question")
    kind = question.get_attribute("data-kind")
    if kind == "single":
        page.locator("#question").get_by_label("Optimizer states").check()
    elif kind == "multiple":
        page.locator("#question").get_by_label("bf16").check()
        page.locator("#question").get_by_label("fp16").check()
    elif kind == "numeric":
        page.fill("input[name=answer]", "16")
    elif kind == "generated":
        page.click("text=Show a hint")
        expect(page.locator(".hint .katex").first).to_be_visible()
        page.fill("input[name=answer]", "16.64")
    if kind == "flashcard":
        page.click("text=Answer in your head, then reveal")
        page.click("button[name=rating][value='3']")
    else:
        page.click(".answer-form button[type=submit]")
    expect(page.locator("#quiz-result .recorded")).to_have_text("Recorded.")
    return kind


def test_a_review_session_mixes_every_kind_and_shows_progress(page: Page, quiz_server: str) -> None:
    register(page, quiz_server)
    page.goto(f"{quiz_server}/quiz")
    kinds = []
    for _ in range(5):
        kinds.append(answer_current(page))
        expect(page.locator("#quiz-result .verdict")).to_contain_text(re.compile("Correct|Rated"))
        page.click("#next-question")
    assert sorted(kinds) == ["flashcard", "generated", "multiple", "numeric", "single"]
    expect(page.locator("#all-done")).to_be_visible()
    page.goto(f"{quiz_server}/progress")
    expect(page.locator("#answer-count")).to_have_text("5 of 5 correct")
    expect(page.locator("#next-due time")).to_be_visible()
    expect(page.locator("#history-chart canvas").first).to_be_visible()


def test_a_mock_interview_ends_in_a_report(page: Page, quiz_server: str) -> None:
    register(page, quiz_server)
    page.goto(f"{quiz_server}/mock")
    page.fill("input[name=questions]", "3")
    page.fill("input[name=minutes]", "5")
    page.click("#mock-start button[type=submit]")
    expect(page.locator("#mock-clock")).to_have_text(re.compile(r"^[45]:\d\d$"))
    for n in range(3):
        expect(page.locator("#mock-index")).to_have_text(str(n + 1))
        kind = page.locator("#question").get_attribute("data-kind")
        if kind in ("numeric", "generated"):
            page.fill("input[name=answer]", "1")  # wrong on purpose
        elif kind == "single":
            page.locator("#question").get_by_label("Optimizer states").check()
        else:
            page.locator("#question").get_by_label("fp32").check()  # wrong
        page.click(".answer-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("Mock interview report")
    expect(page.locator("#mock-score")).to_contain_text("of 3")
    expect(page.locator("#gaps a[href^='/cards/']").first).to_be_visible()


def test_the_group_page_shows_members_who_opted_in(
    page: Page, browser: Browser, quiz_server: str
) -> None:
    register(page, quiz_server)
    page.goto(f"{quiz_server}/groups")
    page.fill("#create-group input[name=name]", "Study buddies")
    page.click("#create-group button")
    code = page.locator("#invite-code").inner_text()
    page.click("#sharing button")  # share
    page.goto(f"{quiz_server}/quiz")
    answer_current(page)

    other = browser.new_context().new_page()
    friend = register(other, quiz_server)
    other.goto(f"{quiz_server}/groups")
    other.fill("#join-group input[name=invite_code]", code)
    other.click("#join-group button")
    expect(other.locator("h1")).to_have_text("Study buddies")
    sharer = other.locator("section.member").filter(has=other.locator(".member-topics"))
    expect(sharer).to_have_count(1)
    expect(sharer.locator("tr[data-card]").first).to_be_visible()
    expect(other.locator(f"section[data-member='{friend}'] .not-shared")).to_be_visible()
    expect(other.locator("#weekly-summary")).to_contain_text("1 answer")
    other.context.close()
