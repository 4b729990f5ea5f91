"""A daily review by keyboard only, in a real Chromium: after registering, not one click.
Digits pick options, Enter submits and goes on, Space reveals a flashcard and a digit rates
it; the progress bar moves with each answer, and the review ends on its results page."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.learner import register
from tests.e2e.test_quiz import quiz_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.browser


def digit_of(page: Page, text: str) -> str:
    """The key that picks the option showing `text` (options are shuffled)."""
    labels = page.locator("#question label.option").all_inner_texts()
    matches = [n for n, label in enumerate(labels, 1) if label.split(None, 1)[1].strip() == text]
    assert len(matches) == 1, labels
    return str(matches[0])


def expect_answered(page: Page, done: int, verdict: str) -> None:
    expect(page.locator("#quiz-result .verdict")).to_contain_text(verdict)
    expect(page.locator("#review-progress-text")).to_have_text(f"{done} of 5 done today")
    expect(page.locator("#review-progress progress")).to_have_attribute("value", str(done))
    # The answered form is done with; the next question has the focus.
    expect(page.locator("#next-question")).to_be_focused()
    expect(page.locator("#question form.answer-form")).to_have_js_property("inert", True)


def go_on(page: Page, key: str, done: int) -> None:
    page.keyboard.press(key)
    if done < 5:
        expect(page.locator("#review-progress-text")).to_have_text(f"{done} of 5 done today")
        expect(page.locator("#quiz-result .verdict")).to_have_count(0)


def test_a_review_by_keyboard_only_ends_on_the_results_page(
    page: Page,
    quiz_server: str,  # noqa: F811
) -> None:
    register(page, quiz_server)
    page.goto(f"{quiz_server}/quiz")
    expect(page.locator("#review-progress-text")).to_have_text("0 of 5 done today")
    expect(page.locator("#question .keys-hint")).to_contain_text("Keys:")

    # Single choice: a digit picks, another digit moves the pick, Enter submits.
    expect(page.locator("#question")).to_have_attribute("data-kind", "single")
    page.keyboard.press(digit_of(page, "Activations"))
    right = digit_of(page, "Optimizer states")
    page.keyboard.press(right)
    expect(page.locator("#question label.option input").nth(int(right) - 1)).to_be_checked()
    page.keyboard.press("Enter")
    expect_answered(page, 1, "Correct.")
    go_on(page, "Enter", 1)

    # Numeric: the answer box has the focus; digits go into it, not to the options.
    expect(page.locator("#question")).to_have_attribute("data-kind", "numeric")
    expect(page.locator("input[name=answer]")).to_be_focused()
    page.keyboard.type("16")
    expect(page.locator("input[name=answer]")).to_have_value("16")
    page.keyboard.press("Enter")
    expect_answered(page, 2, "Correct.")
    go_on(page, "Space", 2)

    # Multiple choice: a digit ticks, the same digit again unticks.
    expect(page.locator("#question")).to_have_attribute("data-kind", "multiple")
    fp32 = digit_of(page, "fp32")
    page.keyboard.press(fp32)
    page.keyboard.press(digit_of(page, "bf16"))
    page.keyboard.press(fp32)
    page.keyboard.press(digit_of(page, "fp16"))
    expect(page.locator("#question input[type=checkbox]:checked")).to_have_count(2)
    page.keyboard.press("Enter")
    expect_answered(page, 3, "Correct.")
    go_on(page, "Enter", 3)

    # Generated, answered as a number.
    expect(page.locator("#question")).to_have_attribute("data-kind", "generated")
    page.keyboard.type("16.64")
    page.keyboard.press("Enter")
    expect_answered(page, 4, "Correct.")
    go_on(page, "Enter", 4)

    # Flashcard: a digit does nothing until Space reveals the back; then 3 rates it Good.
    expect(page.locator("#question")).to_have_attribute("data-kind", "flashcard")
    page.keyboard.press("3")
    expect(page.locator("details.reveal .back")).to_be_hidden()
    page.keyboard.press(" ")
    expect(page.locator("details.reveal .back")).to_be_visible()
    page.keyboard.press("3")
    expect_answered(page, 5, "Rated Good.")
    go_on(page, " ", 5)

    # Nothing left: the results of today's review, and each answer was recorded once.
    expect(page.locator("#all-done")).to_be_visible()
    expect(page.locator("#review-results")).to_be_visible()
    expect(page.locator("#results-answers .stat-value")).to_have_text("5")
    expect(page.locator("#results-right .stat-value")).to_have_text("100%")
    expect(page.locator("#review-progress")).to_have_count(0)
