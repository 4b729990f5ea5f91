"""The "Check yourself" boxes inside a card (issue #29) in a real Chromium, on the quiz's
fixture bank (memory-anatomy asks fx-numeric after its first main section, fx-single after
its second): answered inline by htmx at a phone's width, and without JavaScript by a plain
form and a page that leads back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.main import create_app
from tests.e2e.learner import register
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def checks_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = make_settings(tmp_path_factory.mktemp("checks-e2e") / "data",
                             content_dir=FIXTURE_CONTENT)  # fmt: skip
    with serving(create_app(settings)) as url:
        yield url


def page_width(page: Page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_the_first_check_answers_inline_on_a_phone(page: Page, checks_server: str) -> None:
    page.set_viewport_size(PHONE)
    page.goto(f"{checks_server}/cards/memory-anatomy")
    box = page.locator("#card .card-check").first
    expect(box.locator(".check-title")).to_have_text("Check yourself")
    expect(box.locator(".prompt")).to_contain_text("Bytes per parameter")
    assert page_width(page) <= PHONE["width"]
    box.locator("input[name=answer]").fill("16")
    box.get_by_role("button", name="Check").click()
    expect(box.locator(".result .verdict")).to_contain_text("Correct.")
    expect(box.locator(".explanation")).to_contain_text("2 + 2 + 12 = 16 bytes")
    expect(box.locator(".not-saved a")).to_have_text(["register", "sign in"])
    expect(box.locator("form")).to_have_count(0)  # answered: not sent twice
    assert page.url.endswith("/cards/memory-anatomy")  # swapped in, not a new page
    assert page_width(page) <= PHONE["width"]


def test_a_signed_in_learners_check_is_recorded(page: Page, checks_server: str) -> None:
    register(page, checks_server)
    page.goto(f"{checks_server}/cards/memory-anatomy?lang=zh")
    box = page.locator("#card .card-check").nth(1)
    box.get_by_label("优化器状态").check()
    box.locator("button[type=submit]").click()
    expect(box.locator(".result .verdict .ok")).to_be_visible()
    expect(box.locator(".option-feedback")).to_contain_text("第 1 阶段切分优化器状态。")
    expect(box.locator(".recorded")).to_be_visible()


def test_without_javascript_a_check_is_a_form_and_a_page(
    browser: Browser, checks_server: str
) -> None:
    context = browser.new_context(java_script_enabled=False, viewport=PHONE)
    page = context.new_page()
    page.goto(f"{checks_server}/cards/memory-anatomy")
    box = page.locator("#card .card-check").nth(1)
    box.get_by_label("Activations").check()
    box.locator("button[type=submit]").click()
    expect(page.locator("main .result .verdict")).to_contain_text("Not quite.")
    assert page.url.startswith(f"{checks_server}/cards/memory-anatomy/check")
    assert page_width(page) <= PHONE["width"]
    page.click("#back-to-card")
    assert page.url.endswith(
        "/cards/memory-anatomy?lang=en#what-a-gpu-reports-beyond-the-textbook-count"
    )
    expect(page.locator("#what-a-gpu-reports-beyond-the-textbook-count")).to_be_in_viewport()
    context.close()
