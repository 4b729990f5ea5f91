"""The layout planner in a real Chromium: pick a model, see the Pareto chart and the breakdown,
sort the table, ask why not, carry a layout to the training-memory calculator, and calibrate the
profile to uploaded runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.calculators.calibration_view import EXAMPLE_CSV

pytestmark = pytest.mark.browser


def test_planner_draws_the_front_and_opens_the_memory_calculator(page: Page) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/calculators/planner")
    expect(page.locator("#planner-chart canvas").first).to_be_visible()
    page.select_option("#planner-form select[name=preset]", "llama3-70b")
    page.fill("#planner-form input[name=nodes]", "4")
    expect(page).to_have_url(re.compile(r"preset=llama3-70b.*nodes=4"))
    expect(page.locator("#planner-summary")).to_contain_text("Llama 3 70B")
    # The scatter: a canvas, and the Pareto front series drawn from its points.
    chart = page.locator("#planner-chart")
    expect(chart.locator("canvas").first).to_be_visible()
    expect(chart).to_have_attribute("data-front-points", re.compile(r"^[1-9]\d*$"))
    expect(chart.locator(".u-legend")).to_contain_text("Pareto front")
    # The breakdown of the best layout, every term linked to its card.
    expect(page.locator("#step-terms tr[data-term=compute]")).to_be_visible()
    expect(page.locator("#memory-terms tr[data-term=activations] a.card-link")).to_have_attribute(
        "href", "/cards/zero-and-activations"
    )
    # Sorting by memory puts the smallest first.
    page.locator("#planner-table th", has_text="Memory / GPU").click()
    values = page.locator("#planner-table tbody td:nth-child(12)").evaluate_all(
        "cells => cells.map(c => parseFloat(c.dataset.value))"
    )
    assert values == sorted(values)
    # Why not dp=3? The rule and its reason.
    page.fill("#why-not-form input[name=dp]", "3")
    page.locator("#why-not-form button[type=submit]").click()
    expect(page.locator("#why-not")).to_contain_text("world_size")
    expect(page).to_have_url(re.compile(r"dp=3"))
    # Pick the second-fastest layout, then open it in the training-memory calculator.
    page.locator("#planner-table a.pick").nth(1).click()
    expect(page.locator("#chosen-title")).to_contain_text("Your layout")
    layout = page.locator("#chosen-layout").inner_text()
    degrees = dict(re.findall(r"(dp|tp|pp|cp)=(\d+)", layout))
    memory = page.locator("#chosen-memory").inner_text()
    page.locator("#training-link").click()
    expect(page).to_have_url(re.compile(r"/calculators/training-memory\?"))
    for name, value in degrees.items():
        expect(page.locator(f"#training-form input[name={name}]")).to_have_value(value)
    expect(page.locator("#gpu-total")).to_have_text(memory)
    assert not [e for e in errors if "Content Security Policy" in e], errors


def test_a_published_run_stays_published_while_its_free_knobs_change(page: Page) -> None:
    # The run's fixed fields are disabled, so htmx must leave them out of the live request:
    # sending them would be refused ("leave out ...") and the panel would vanish.
    page.goto("/calculators/planner?run=bloom-176b")
    expect(page.locator("#published")).to_contain_text("BLOOM")
    page.fill("#planner-form input[name=top]", "20")
    page.locator("#planner-form input[name=top]").press("Tab")
    expect(page).to_have_url(re.compile(r"run=bloom-176b.*top=20"))
    expect(page.locator("#published")).to_contain_text("Rank")
    expect(page.locator(".errors")).to_have_count(0)


def test_calibrating_to_uploaded_runs_then_planning_with_the_profile(
    page: Page, tmp_path: Path
) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/calculators/planner")
    # A built-in profile re-plans like any other input.
    page.select_option("#profile-select", "zero-a100")
    expect(page.locator("#planner-profile strong")).to_have_text("zero-a100")
    expect(page).to_have_url(re.compile(r"profile=zero-a100"))
    page.fill("#planner-form input[name=nodes]", "2")
    expect(page).to_have_url(re.compile(r"nodes=2"))
    # Upload four runs and fit.
    runs = tmp_path / "my-runs.csv"
    runs.write_text(EXAMPLE_CSV)
    page.locator("#calibrate > summary").click()
    page.set_input_files("#calibrate-form input[name=runs_file]", str(runs))
    page.locator("#calibrate-form button[type=submit]").click()
    table = page.locator("#calibration-runs")
    for row in EXAMPLE_CSV.splitlines()[1:]:
        expect(table.locator(f'tr[data-run="{row.split(",")[0]}"]')).to_be_visible()
    summary = page.locator("#calibration-summary")
    expect(summary).to_contain_text("Fitted to 4 runs")
    expect(summary).to_contain_text("leave-one-out")
    # Plan with it: the planner's inputs are kept, the profile is the fitted one.
    page.locator("#plan-with-profile").click()
    expect(page).to_have_url(re.compile(r"nodes=2.*profile=%7B"))
    line = page.locator("#planner-profile")
    expect(line).to_contain_text("Step times from your calibrated profile calibrated")
    expect(line).to_contain_text("fitted to 4 measured runs")
    expect(page.locator("#profile-select option:checked")).to_have_text("your calibrated profile")
    assert not [e for e in errors if "Content Security Policy" in e], errors
