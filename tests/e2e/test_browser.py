"""The card browser (issue #29) in a real Chromium on the real bank: filter, suspend an item
and see its row change in place; on a phone (390 px) the page never scrolls sideways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.main import create_app
from tests.e2e.learner import register
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def real_bank_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(create_app(make_settings(tmp_path_factory.mktemp("browser") / "data"))) as url:
        yield url


@pytest.fixture
def phone_learner(browser: Browser, real_bank_server: str) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    register(page, real_bank_server)
    yield page
    context.close()


def test_filter_and_suspend_an_item_on_a_phone(phone_learner: Page, real_bank_server: str) -> None:
    page = phone_learner
    page.goto(f"{real_bank_server}/quiz")
    page.click("#quiz-filter summary")
    page.click("#browse-link")
    expect(page.locator("h1")).to_have_text("Card browser")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.select_option("#browse-filter select[name=state]", "new")
    page.click("#browse-filter button[type=submit]")
    expect(page).to_have_url(f"{real_bank_server}/quiz/browse?q=&topic=&state=new")
    row = page.locator("#browse-rows tbody tr").first
    item_id = row.get_attribute("data-item")
    expect(row.locator(".browse-state")).to_have_text("New")
    row.get_by_role("button", name="Suspend").click()
    # htmx swaps the row in place: the same item, suspended, with the button to undo it.
    suspended = page.locator(f"#row-{item_id}")
    expect(suspended.locator(".browse-state")).to_have_text("Suspended")
    expect(suspended.get_by_role("button", name="Unsuspend")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.goto(f"{real_bank_server}/quiz/browse?state=suspended")
    expect(page.locator("#browse-rows tbody tr")).to_have_count(1)
    expect(page.locator(f"#row-{item_id}")).to_be_visible()
