"""Every chart drawn in JavaScript speaks Chinese at ?lang=zh: its axis titles, series names,
legend and tick labels come from the page, translated, never from English in static/js."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.learner import answer_any, register

pytestmark = pytest.mark.browser

# What a chart shows: the legend (DOM text) and, drawn on the canvas, the axis titles and tick
# labels, read from the uPlot instance the page's script keeps on the chart's element. The
# accelerator's product name ("Google TPU v5e") is data, not UI.
CHART_TEXT = """(id) => {
  const el = document.getElementById(id);
  const u = el.uplot;
  const texts = [el.querySelector('.u-legend').innerText];
  for (const a of u.axes) {
    if (a.label) texts.push(a.label);
    for (const v of a._values || []) if (v !== null && v !== undefined) texts.push(String(v));
  }
  const gpu = JSON.parse(el.dataset.series || '{}').gpu;
  return texts.map(t => gpu ? t.split(gpu).join(' ') : t);
}"""

LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# An English term in brackets right after its Chinese, as the catalogue writes "拐点 (ridge point)".
TERM_BESIDE_CHINESE = re.compile(r"(?<=[\u3400-\u9fff]) ?[(（][^()（）]*[)）]")
# Units, and the terms the Chinese catalogue itself keeps in English (rank, batch, KV cache,
# goodput, loss, all-reduce, reduce-scatter, all-gather, all-to-all, backward, fwd + bwd,
# Pareto; Young's and Daly's intervals, ZeRO).
KEPT = {"ms", "MiB", "KiB", "GiB", "fp16", "bf16", "fp32", "ZeRO", "rank", "batch", "cache",
        "loss", "all", "reduce", "scatter", "gather", "to", "backward", "fwd", "bwd", "Pareto",
        "Young", "Daly"}  # fmt: skip


def english_words(texts: list[str]) -> list[str]:
    """Latin words of two or more letters that are not a unit, an acronym (GPU, TFLOP, DDP) or
    a kept term: the English a Chinese reader would find in a chart."""
    found = []
    for text in texts:
        for word in LATIN_WORD.findall(TERM_BESIDE_CHINESE.sub("", text)):
            letters = re.sub(r"[^A-Za-z]", "", word)
            if len(letters) > 1 and not letters.isupper() and word not in KEPT:
                found.append(word)
    return found


def assert_chinese_chart(page: Page, chart_id: str) -> None:
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.locator(f"#{chart_id} .u-legend")).to_be_visible(timeout=30_000)
    texts = page.evaluate(CHART_TEXT, chart_id)
    assert re.search(r"[\u3400-\u9fff]", " ".join(texts)), (chart_id, texts)
    assert english_words(texts) == [], (page.url, chart_id, texts)


def test_the_check_finds_english_and_passes_kept_terms() -> None:
    assert english_words(["days at this utilization"]) == ["days", "at", "this", "utilization"]
    assert english_words(["rank 0 线路写出 MiB", "拐点 (ridge point)", "TFLOP/s"]) == []
    assert english_words(["budget (u × memory)"]) == ["budget", "memory"]


@pytest.mark.parametrize(
    ("path", "chart_id"),
    [
        ("/calculators/compute", "compute-chart"),
        ("/calculators/roofline", "roofline-chart"),
        ("/calculators/inference-memory", "inference-chart"),
        ("/calculators/failures?units=1&rate=24&checkpoint_minutes=5&restart_minutes=10",
         "failures-chart"),
        ("/calculators/planner", "planner-chart"),
        ("/calculators/training-memory", "dp-chart"),
    ],
)  # fmt: skip
def test_calculator_charts_in_chinese(page: Page, path: str, chart_id: str) -> None:
    page.goto(f"{path}{'&' if '?' in path else '?'}lang=zh")
    assert_chinese_chart(page, chart_id)


def test_progress_chart_in_chinese(page: Page) -> None:
    register(page)
    page.goto("/quiz?mode=practice&topic=zero-stages&lang=zh")
    answer_any(page)
    page.goto("/progress")
    assert_chinese_chart(page, "history-chart")


# Small runs on the test worker's two ranks: (page, its form, how many raw rows it ends with,
# the charts it draws).
DEMOS = [
    ("all-reduce", {"size_mib": "1", "iterations": "3"}, 6, ["demo-chart"]),
    ("tensor-parallel", {"hidden": "32", "batch": "2", "seq_len": "4", "heads": "2",
                         "iterations": "1"}, 6, ["demo-chart"]),
    ("activation-checkpointing", {"layers": "4", "width": "32", "tokens": "64",
                                  "segment_layers": "2", "steps": "1"}, 6, ["demo-chart"]),
    ("mixed-precision", {"gradients": "1024"}, 8, ["demo-chart"]),
    ("ddp-vs-zero", {"width": "16", "layers": "1", "vocab": "10", "seq_len": "8"}, 24,
     ["zero-loss-chart", "zero-memory-chart"]),
]  # fmt: skip


@pytest.mark.parametrize(("slug", "fields", "rows", "charts"), DEMOS, ids=[d[0] for d in DEMOS])
def test_demo_charts_in_chinese(
    page: Page, slug: str, fields: dict[str, str], rows: int, charts: list[str]
) -> None:
    page.goto(f"/demos/{slug}?lang=zh")
    for name, value in fields.items():
        page.fill(f"input[name={name}]", value)
    page.click("#run-demo")
    expect(page.locator("#rows tr[data-rank]")).to_have_count(rows, timeout=60_000)
    for chart_id in charts:
        assert_chinese_chart(page, chart_id)


def test_collectives_chart_in_chinese(page: Page) -> None:
    page.goto("/demos/collectives?lang=zh")
    page.fill("input[name=max_size_mib]", "0.25")
    page.fill("input[name=sizes]", "2")
    page.fill("input[name=iterations]", "1")
    page.click("#run-demo")
    expect(page.locator("#rows tr[data-kind]")).to_have_count(10, timeout=60_000)
    assert_chinese_chart(page, "demo-chart")
    assert "广播" in " ".join(page.evaluate(CHART_TEXT, "demo-chart"))
