"""The learner's journey in a real Chromium: a visitor follows "Start here" through one whole
step (card, calculator, demo, questions), and a learner plans to a date and sees a dashboard."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from app.journey.syllabus import syllabus_order
from tests.e2e.learner import answer_any, register

pytestmark = pytest.mark.browser


def test_a_visitor_follows_start_here_through_a_whole_step(page: Page) -> None:
    page.goto("/")
    expect(page.locator("#path .path-step")).to_have_count(len(syllabus_order()))
    page.click("#start-here")
    expect(page).to_have_url(re.compile(r"/path/1$"))
    step_url = page.url
    # Step 1 is the first card of the foundations: its card, calculator, demo and questions.
    page.click("#part-card")
    expect(page).to_have_url(re.compile(rf"/cards/{syllabus_order()[0]}\?step=1$"))
    expect(page.locator("#in-30-seconds, h2").first).to_be_visible()
    page.goto(step_url)
    page.click("#part-calculator")
    expect(page).to_have_url(re.compile(r"/calculators/"))
    expect(page.locator("main form").first).to_be_visible()
    # The first step with a demo: its demo runs on real ranks.
    number = next(i for i, card in enumerate(syllabus_order(), 1) if card == "ring-all-reduce")
    page.goto(f"/path/{number}")
    page.click("#part-demo")
    expect(page).to_have_url(re.compile(r"/demos/all-reduce"))
    page.fill("input[name=size_mib]", "1")
    page.fill("input[name=iterations]", "2")
    page.click("#run-demo")
    expect(page.locator("#rows tr[data-rank]")).to_have_count(4, timeout=30_000)
    # The questions need an account: the visitor registers and comes back to the step.
    register(page)
    page.goto(step_url)
    page.click("#part-questions")
    expect(page).to_have_url(re.compile(r"/quiz\?mode=practice&topic="))
    for _ in range(5):
        answer_any(page)
        page.goto(page.url)
    page.goto("/")
    expect(page.locator("#stat-steps .stat-value")).to_have_text(re.compile(r"^\d+/51$"))


def test_a_learner_plans_to_a_date_and_sees_the_plan_and_the_dashboard(page: Page) -> None:
    register(page)
    page.goto("/")
    expect(page.locator("#set-a-date")).to_be_visible()
    page.click("#set-a-date")
    interview = (datetime.now(UTC).date() + timedelta(days=30)).isoformat()
    page.fill("input[name=interview_date]", interview)
    page.fill("input[name=minutes_per_day]", "60")
    page.click("#plan-form button[type=submit]")
    expect(page.locator("#plan-calendar .calendar-day")).to_have_count(30)
    expect(page.locator("#plan-fits")).to_be_visible()
    expect(page.locator("#plan-calendar .calendar-day.today a").first).to_be_visible()
    page.goto("/")
    expect(page.locator("#today")).to_contain_text("New:")
    expect(page.locator("#mastery .bar-row")).to_have_count(7)
    expect(page.locator("#stat-due .stat-label")).to_have_text("reviews due now")
    expect(page.locator("#today-reviews")).to_contain_text(
        "0 reviews due by the end of today, 0 of them now"
    )
    expect(page.locator("#continue")).to_contain_text("step 1")
    # Too little time: the plan says so, with the minutes that would fit.
    page.goto("/plan")
    page.fill("input[name=interview_date]",
              (datetime.now(UTC).date() + timedelta(days=3)).isoformat())  # fmt: skip
    page.fill("input[name=minutes_per_day]", "20")
    page.click("#plan-form button[type=submit]")
    expect(page.locator("#plan-warning")).to_contain_text("do not fit")


def test_a_path_that_does_not_fit_lists_what_is_left_out_until_steps_are_compressed(
    page: Page,
) -> None:
    register(page)
    page.goto("/plan")
    page.fill("input[name=interview_date]",
              (datetime.now(UTC).date() + timedelta(days=21)).isoformat())  # fmt: skip
    page.fill("input[name=minutes_per_day]", "45")
    expect(page.locator("#plan-steps")).to_have_value("false")
    page.click("#plan-form button[type=submit]")
    # Whole steps: the Design level is planned, and what is left out is listed with its totals.
    design = syllabus_order().index("choosing-a-parallel-layout") + 1
    expect(page.locator(f"#plan-calendar a[href='/path/{design}']")).to_be_visible()
    expect(page.locator("#plan-left-out")).to_contain_text("Left out:")
    expect(page.locator("#left-out-total")).to_have_text(re.compile(r"^\d+ steps, \d+ minutes$"))
    expect(page.locator("#plan-fits-at")).to_contain_text("minutes a day everything fits")
    expect(page.locator("#plan-priority")).to_contain_text("the Design level")
    left_out = page.locator("#plan-left-out a").first
    card_id = left_out.get_attribute("data-card")
    left_out.click()
    expect(page).to_have_url(re.compile(rf"/path/{syllabus_order().index(card_id) + 1}$"))
    # Compressed steps: the same days hold the whole path, and the choice is remembered.
    page.goto("/plan")
    page.select_option("#plan-steps", "true")
    page.click("#plan-form button[type=submit]")
    expect(page.locator("#plan-fits")).to_be_visible()
    expect(page.locator("#plan-left-out")).to_have_count(0)
    page.reload()
    expect(page.locator("#plan-steps")).to_have_value("true")
    page.goto("/path/1")
    expect(page.locator("#step-parts")).to_contain_text("Answer 2 of its questions right")
