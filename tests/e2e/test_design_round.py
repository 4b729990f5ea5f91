"""A system-design round in a real Chromium (issue #27): open a round from the list, fill the
sheet with the model answer's figures, and see every term graded beside the calculators'
figures, the model answer and what an interviewer would ask next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from app.main import create_app
from app.quiz.design_keys import round_figures
from tests.e2e.learner import register
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.utils import make_settings, serving

pytestmark = pytest.mark.browser

ROUND = "llama3-70b-chat-h100"


@pytest.fixture(scope="module")
def rounds_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    settings = make_settings(tmp_path_factory.mktemp("rounds-e2e") / "data",
                             content_dir=FIXTURE_CONTENT)  # fmt: skip
    app = create_app(settings)
    figures = round_figures(app.state.design_rounds.get(ROUND))
    with serving(app) as url:
        yield url, figures


def test_a_round_filled_with_the_model_answer_is_graded_term_by_term(
    page: Page, rounds_server: tuple[str, dict]
) -> None:
    url, figures = rounds_server
    register(page, url)
    page.goto(f"{url}/mock/design/rounds")
    page.locator(f'tr[data-round="{ROUND}"] a').click()
    expect(page.locator("#design-round")).to_contain_text(figures["concurrent"])
    for name in ("tp", "replicas", "weights_gb", "kv_gb", "decode_ms"):
        page.fill(f"input[name={name}]", figures[name].replace(",", ""))
    page.select_option("select[name=fits]", "yes")
    page.fill("textarea[name=notes]", "Latency per token, cache use, all-reduce time.")
    boxes = page.locator("input[name=watch]")
    for i in range(boxes.count()):
        boxes.nth(i).check()
    page.get_by_role("button", name="Grade my sheet").click()

    expect(page.locator("#round-score")).to_have_text("100 / 100")
    rows = page.locator("#round-terms tbody tr")
    grades = rows.evaluate_all("rows => rows.map(r => [r.dataset.term, r.dataset.grade])")
    assert grades == [[t, "pass"] for t in ("tp", "replicas", "weights_gb", "kv_gb", "fits",
                                            "decode_ms", "watch")]  # fmt: skip
    expect(page.locator('tr[data-term="kv_gb"] td.num').nth(1)).to_have_text(figures["kv_gb"])
    expect(page.locator("#round-model-answer")).to_contain_text(f"TP {figures['tp']}")
    expect(page.locator("#round-watch li.ticked")).to_have_count(boxes.count())
    expect(page.locator("#round-next li")).to_have_count(3)
    expect(page.locator("#round-next")).to_contain_text("latency target halves")
    # A phone's width: the terms table scrolls inside its wrapper, never the page.
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
