"""A missing page in a real Chromium: the 404 page in the site's layout, and a way home."""

from __future__ import annotations

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

pytestmark = pytest.mark.browser


def test_a_missing_page_says_so_and_links_back_home(page: Page, base_url: str) -> None:
    # The CSP forbids inline script: Chromium reports any the page tried to run.
    refused: list[str] = []
    page.on("console", lambda message: _keep_csp_reports(message, refused))
    response = page.goto("/no-such-page")
    assert response is not None and response.status == 404
    expect(page).to_have_title("Page not found · ShardLab")
    expect(page.locator("h1")).to_have_text("Page not found")
    expect(page.get_by_role("search")).to_be_visible()
    page.get_by_role("link", name="start from the home page").click()
    expect(page).to_have_url(f"{base_url}/")
    expect(page.locator("h1")).to_contain_text("Distributed LLM training")
    assert refused == []


def _keep_csp_reports(message: ConsoleMessage, refused: list[str]) -> None:
    if "Content Security Policy" in message.text:
        refused.append(message.text)
