"""What a learner does in the browser, for tests and scripts/screenshots.py: register, and
answer whatever question the page shows (right or wrong does not matter to the caller)."""

from __future__ import annotations

import uuid

from playwright.sync_api import Page, expect


def register(page: Page, base: str = "") -> str:
    name = f"learner-{uuid.uuid4().hex[:8]}"
    page.goto(f"{base}/register")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "a long password")
    page.click("main button[type=submit]")
    expect(page.locator(".account .who")).to_have_text(name)
    return name


def answer_any(page: Page) -> None:
    """Answers the question on the page (submit_any) and waits for the answer to be kept."""
    submit_any(page)
    expect(page.locator("#quiz-result .recorded")).to_be_visible()


def submit_any(page: Page) -> None:
    """Answers the question on the page with its first option, or 1, or a Good rating."""
    kind = page.locator("#question").get_attribute("data-kind")
    if kind in ("single", "multiple"):
        page.locator("#question input[name=option]").first.check()
    elif kind in ("numeric", "generated"):
        page.fill("input[name=answer]", "1")
    if kind == "flashcard":
        page.click("details.reveal summary")
        page.click("button[name=rating][value='3']")
    else:
        page.click(".answer-form button[type=submit]")
