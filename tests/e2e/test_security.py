"""In Chromium: the Content-Security-Policy blocks nothing the pages use, and htmx sends the
CSRF token from <body hx-headers:inherited> on its own."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

PAGES = [
    # mermaid (its own <style> inside the SVG) and KaTeX (style attributes)
    ("/cards/ring-all-reduce", "pre.mermaid svg"),
    ("/cards/zero-stages", ".katex"),
    ("/calculators/training-memory", "main h1"),
    ("/demos/all-reduce", "main h1"),
    ("/register", "form"),
]


def _watch_csp(page: Page) -> list[str]:
    problems: list[str] = []
    page.on(
        "console",
        lambda msg: (
            problems.append(msg.text)
            if "Content Security Policy" in msg.text or "Content-Security-Policy" in msg.text
            else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    return problems


@pytest.mark.parametrize(("path", "ready"), PAGES)
def test_pages_run_under_the_policy_without_violations(page: Page, path: str, ready: str) -> None:
    problems = _watch_csp(page)
    page.goto(path)
    expect(page.locator(ready).first).to_be_visible(timeout=15000)
    page.wait_for_timeout(300)  # late violations (mermaid renders after load)
    assert problems == []


def test_htmx_posts_carry_the_token(page: Page) -> None:
    problems = _watch_csp(page)
    page.goto("/register")
    page.fill("input[name=username]", "htmx-user")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.goto("/quiz")
    answer = page.locator("input[name=answer]").first
    if answer.count() == 0:
        pytest.skip("the quiz page drew a question without a typed answer")
    answer.fill("1")
    with page.expect_response(re.compile(r"/quiz/answer")) as response_info:
        page.locator("form.answer-form button[type=submit]").first.click()
    response = response_info.value
    assert response.request.headers.get("x-csrf-token"), "htmx sent no X-CSRF-Token"
    assert response.status == 200, response.text()[:300]
    assert problems == []
