"""The path keeps its place (#29) in a real Chromium: a visitor on step 1 reads its card and
comes back by the bar, practises its questions without an account (graded, not saved), then
registers from the "Not saved" line and lands on the same questions, now kept."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Page, expect

from app.journey.syllabus import syllabus_order
from tests.e2e.learner import submit_any

pytestmark = pytest.mark.browser

FIRST_CARD = syllabus_order()[0]


def test_a_visitor_practises_a_step_and_registers_back_to_its_questions(page: Page) -> None:
    page.goto("/path/1")
    # The card leads back to its step.
    page.click("#part-card")
    expect(page).to_have_url(re.compile(rf"/cards/{FIRST_CARD}\?step=1$"))
    expect(page.locator("#back-to-step")).to_contain_text("Step 1:")
    page.click("#back-to-step a")
    expect(page).to_have_url(re.compile(r"/path/1$"))
    # Signed out, the questions are practised here: graded and explained, not saved.
    page.click("#part-questions")
    expect(page).to_have_url(re.compile(rf"/practice\?topic={FIRST_CARD}&step=1$"))
    expect(page.locator("#back-to-step a")).to_have_attribute("href", "/path/1")
    expect(page.locator("#not-saved")).to_contain_text("Not saved")
    submit_any(page)
    result = page.locator("#quiz-result #result")
    expect(result.locator(".verdict")).to_be_visible()
    expect(result.locator(".not-saved")).to_contain_text("Not saved")
    expect(result.locator(".recorded")).to_have_count(0)
    expect(result.locator("#next-question")).to_be_focused()
    page.keyboard.press("Enter")  # the quiz's keys: Enter goes on to the next question
    expect(page).to_have_url(re.compile(r"/practice\?.*after="))
    expect(page.locator("#question")).to_be_visible()
    # "register" in the line comes back to the same card's questions, in the quiz.
    page.locator("#not-saved a", has_text="register").click()
    expect(page).to_have_url(re.compile(r"/register\?next="))
    name = f"learner-{uuid.uuid4().hex[:8]}"
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "a long password")
    page.click("main button[type=submit]")
    expect(page).to_have_url(re.compile(rf"/quiz\?mode=practice&topic={FIRST_CARD}$"))
    expect(page.locator(".account .who")).to_have_text(name)
    submit_any(page)
    expect(page.locator("#quiz-result .recorded")).to_be_visible()
