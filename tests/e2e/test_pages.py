"""Each page's main flow in a real Chromium."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from app.calc.memory import model_states_per_gpu
from app.formatting import gb

pytestmark = pytest.mark.browser


def test_card_shows_rendered_math_and_diagram(page: Page) -> None:
    page.goto("/cards/zero-stages")
    expect(page.locator("h1")).to_contain_text("ZeRO")
    expect(page.locator("#card .katex").first).to_be_visible()
    expect(page.locator("#card .katex-error")).to_have_count(0)
    expect(page.locator("#card pre.mermaid svg")).to_be_visible(timeout=10_000)
    expect(page.locator("#card .worked-example").first).to_contain_text("31.41 GB")


def test_calculator_updates_as_you_type(page: Page) -> None:
    page.goto("/calculators/memory")
    expect(page.locator("#result tr[data-stage='3'] .total")).to_have_text("1.88 GB")
    expect(page.locator("#result .katex").first).to_be_visible()
    page.fill("input[name=dp_degree]", "8")
    expected = gb(model_states_per_gpu(7.5e9, 8, 3).total_bytes)
    expect(page.locator("#result tr[data-stage='3'] .total")).to_have_text(expected)
    expect(page).to_have_url(re.compile(r"dp_degree=8"))
    # Formulas arrive with the swap and are rendered by KaTeX there too.
    expect(page.locator("#result .katex").first).to_be_visible()
    page.fill("input[name=dp_degree]", "0")
    expect(page.locator("#result .errors")).to_contain_text("must be at least 1")


def test_demo_streams_rows_beside_the_prediction(page: Page) -> None:
    page.goto("/demos/all-reduce")
    page.fill("input[name=size_mib]", "1")
    page.fill("input[name=iterations]", "3")
    page.click("#run-demo")
    expect(page.locator(".prediction .katex").first).to_be_visible(timeout=20_000)
    rows = page.locator("#rows tr[data-rank]")
    expect(rows).to_have_count(6, timeout=30_000)  # 3 iterations x 2 ranks
    expect(page.locator("#demo-status")).to_have_text("Finished.")
    logical = page.locator("#verdict-table tr", has_text="Logical bytes sent per rank")
    expect(logical.locator(".judged")).to_have_text("✓")
    expect(page.locator("#demo-summary")).to_contain_text("median")
    expect(page.locator("#demo-chart canvas").first).to_be_visible()
    first = rows.first
    expect(first.locator(".logical")).to_have_text("1,048,576")


def test_demo_bad_input_gets_an_inline_message(page: Page) -> None:
    page.goto("/demos/all-reduce")
    page.fill("input[name=size_mib]", "1000")
    page.evaluate("document.querySelector('#demo-form').noValidate = true")
    page.click("#run-demo")
    expect(page.locator("#demo-output .errors")).to_contain_text("must be at most 64")


def test_training_memory_follows_a_preset_and_a_pasted_config(page: Page) -> None:
    page.goto("/calculators/training-memory")
    total = page.locator("#gpu-total")
    first = total.inner_text()
    expect(page.locator("#terms .katex").first).to_be_visible()
    expect(page.locator("#dp-chart canvas").first).to_be_visible()
    page.select_option("select[name=preset]", "llama2-7b")
    expect(total).not_to_have_text(first)
    expect(page).to_have_url(re.compile(r"preset=llama2-7b.*layers=32"))
    expect(page.locator("#dp-chart canvas").first).to_be_visible()
    seven_b = total.inner_text()
    page.click("text=Fill from a Hugging Face")
    page.fill(
        "#hf-config",
        '{"model_type": "llama", "num_hidden_layers": 40, "hidden_size": 5120,'
        ' "num_attention_heads": 40, "intermediate_size": 13824, "vocab_size": 32000}',
    )
    page.click("#hf-config-fill")
    expect(page.locator("#hf-config-status")).to_contain_text("13,015,864,320")
    expect(page.locator("input[name=layers]")).to_have_value("40")
    expect(total).not_to_have_text(seven_b)
    page.fill("input[name=tp]", "3")
    expect(page.locator("#training-result .errors")).to_contain_text("must divide")


@pytest.mark.parametrize(
    "path",
    ["/", "/cards/zero-stages", "/calculators/memory", "/calculators/training-memory",
     "/demos/all-reduce"],
)  # fmt: skip
def test_pages_fit_a_phone_screen(page: Page, path: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(path)
    page.wait_for_load_state("networkidle")
    # Wide tables and formulas scroll inside their own boxes; the page itself never does.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    expect(page.locator("header.site nav a", has_text="Progress")).to_be_in_viewport()


@pytest.mark.parametrize(
    ("path", "chart"),
    [("/calculators/roofline", "#roofline-chart"), ("/calculators/training-memory", ".uplot"),
     ("/calculators/planner", ".uplot")],
)  # fmt: skip
def test_charts_follow_the_window_when_it_narrows(page: Page, path: str, chart: str) -> None:
    # Drawn at 1280 px, then the phone is turned upright: the chart must shrink with its box.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(path)
    expect(page.locator(f"{chart} canvas").first).to_be_visible()
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("document.documentElement.scrollWidth <= 390", timeout=5000)
    width = page.locator(f"{chart} canvas").first.evaluate("c => c.getBoundingClientRect().width")
    assert width <= 390


@pytest.mark.parametrize("path", ["/calculators/memory", "/cards/zero-stages"])
def test_katex_renders_the_formulas_without_a_warning(page: Page, path: str) -> None:
    # A top-level "\\" in display math renders, but KaTeX warns that LaTeX would ignore it.
    said: list[str] = []
    page.on("console", lambda message: said.append(message.text))
    page.goto(path)
    expect(page.locator(".math.block .katex-display").first).to_be_visible()
    assert not [text for text in said if "LaTeX" in text or "KaTeX" in text], said
