"""The path keeps its place (#29): the pages a step links to lead back to it, a signed-in
learner's step ticks the parts done, and a finished step says so with the way on."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fsrs import Rating
from sqlmodel import Session, func, select

from app.journey.models import CardVisit
from app.journey.parts import pages_of
from app.journey.syllabus import steps, syllabus_order
from app.live.worker_process import LocalWorker
from app.main import create_app
from tests.quiz.test_mastery import answer_items
from tests.utils import log_out, make_settings, register

RING = syllabus_order().index("ring-all-reduce") + 1  # a step with a calculator and a demo


def _bar(page: str) -> str | None:
    """The back-to-step bar's link and words, or None when the page has none."""
    bar = re.search(r'<nav class="back-to-step" id="back-to-step"[^>]*>\s*(<a .*?</a>)', page, re.S)
    return bar.group(1) if bar else None


def _ticked(page: str) -> set[str]:
    """The parts of the step page that are ticked."""
    return set(re.findall(r'<li class="step-part done" data-part="(\w+)">', page))


def _visits(client: TestClient) -> int:
    with Session(client.app.state.engine) as session:
        return session.exec(select(func.count()).select_from(CardVisit)).one()


def test_every_page_a_step_links_to_leads_back_to_it(client: TestClient) -> None:
    step = client.get(f"/path/{RING}").text
    links = re.findall(r'<a class="button" href="([^"]+)" id="part-(\w+)"', step)
    assert [part for _, part in links] == ["card", "calculator", "demo", "questions"]
    title = steps(client.app.state.cards)[RING - 1].card.meta.title
    for href, _ in links:
        page = client.get(href.replace("&amp;", "&"))
        assert page.status_code == 200, href
        assert _bar(page.text) == (
            f'<a href="/path/{RING}">← Step {RING}: {title} — back to the path</a>'
        ), href


def test_every_step_s_calculator_and_demo_take_the_step_and_keep_working(
    client: TestClient,
) -> None:
    # ?step= is not one of a calculator's inputs: pages whose forms refuse unknown fields
    # still compute (200, not 422) and show the bar.
    for step in steps(client.app.state.cards):
        pages = pages_of(step)
        for path in (pages.calculator, pages.demo):
            if path:
                page = client.get(f"{path}?step={step.number}")
                assert page.status_code == 200 and _bar(page.text), (path, step.number)


def test_a_step_s_page_keeps_its_other_inputs(client: TestClient) -> None:
    number = syllabus_order().index("zero-stages") + 1
    page = client.get(f"/calculators/memory?params_b=13&dp_degree=16&step={number}").text
    assert _bar(page)
    assert re.search(r'name="params_b"[^>]*value="13(\.0)?"', page)
    assert re.search(r'name="dp_degree"[^>]*value="16"', page)
    demo = client.get(f"/demos/all-reduce?size_mib=3&step={RING}").text
    assert _bar(demo) and re.search(r'name="size_mib"[^>]*value="3(\.0)?"', demo)


def test_a_wrong_or_garbled_step_shows_no_bar_and_no_error(client: TestClient) -> None:
    # Step 1's card is training-compute, and its calculator compute: step 2, a step off the
    # path, a fullwidth "1" or no number at all is no way back from them.
    queries = ["step=2", "step=0", "step=-1", "step=99999", "step=1.5", "step=abc", "step=",
               "step=%EF%BC%91", "step=1&step=2"]  # fmt: skip
    for path in (f"/cards/{syllabus_order()[0]}", "/calculators/compute"):
        assert _bar(client.get(f"{path}?step=1").text)
        for query in queries:
            page = client.get(f"{path}?{query}")
            assert page.status_code == 200 and _bar(page.text) is None, (path, query)


def test_another_step_s_calculator_or_demo_shows_no_bar(client: TestClient) -> None:
    ring = pages_of(steps(client.app.state.cards)[RING - 1])
    assert ring.calculator and ring.demo
    for path in (ring.calculator, ring.demo):
        assert _bar(client.get(f"{path}?step=1").text) is None  # step 1's are not these
    assert _bar(client.get(f"/practice?topic=roofline&step={RING}").text) is None


def test_a_signed_in_learner_s_parts_are_ticked_as_they_open_the_pages(
    client: TestClient,
) -> None:
    # A visitor's visits are kept nowhere, and their step page ticks nothing.
    ring = pages_of(steps(client.app.state.cards)[RING - 1])
    client.get(ring.card)
    assert _visits(client) == 0 and _ticked(client.get(f"/path/{RING}").text) == set()
    register(client)
    assert _ticked(client.get(f"/path/{RING}").text) == set()
    assert client.get(f"{ring.card}?step={RING}").status_code == 200
    assert _ticked(client.get(f"/path/{RING}").text) == {"card"}
    assert ring.calculator and client.get(ring.calculator).status_code == 200
    assert _ticked(client.get(f"/path/{RING}").text) == {"card", "calculator"}
    # A page read again is not kept again; a card that is not one is kept not at all.
    client.get(ring.card)
    client.get("/cards/no-such-card")
    assert _visits(client) == 2
    # The ticks are the learner's own.
    log_out(client)
    register(client, "bob")
    assert _ticked(client.get(f"/path/{RING}").text) == set()


def test_answering_a_step_s_questions_ticks_them_and_says_the_step_is_done(
    client: TestClient,
) -> None:
    register(client)
    bank = client.app.state.quiz
    first, second = syllabus_order()[:2]
    graded = [i.id for i in bank.for_cards([first]) if i.kind != "flashcard"]
    answer_items(client, graded[:4], Rating.Good)
    page = client.get("/path/1").text
    assert 'id="step-done"' not in page and "questions" not in _ticked(page)
    assert 'href="/path/1" id="continue"' in client.get("/").text
    answer_items(client, graded[4:5], Rating.Good)  # the fifth right answer finishes it
    page = client.get("/path/1").text
    assert "questions" in _ticked(page)
    done = re.search(r'<div class="notice ok step-done" id="step-done">(.*?)</div>', page, re.S)
    assert done and "<strong>Step 1 done.</strong>" in done.group(1)
    next_title = steps(client.app.state.cards)[1].card.meta.title
    assert f'href="/path/2" id="next-to-do">Next: step 2 — {next_title} →</a>' in done.group(1)
    assert 'href="/path/2" id="continue"' in client.get("/").text
    # Step 3 done before step 2: once step 2 is done too, its way on skips step 3.
    third = syllabus_order()[2]
    for card in (third, second):
        answer_items(client, [i.id for i in bank.for_cards([card]) if i.kind != "flashcard"][:5],
                     Rating.Good)  # fmt: skip
    assert 'href="/path/4" id="next-to-do"' in client.get("/path/2").text
    assert 'href="/path/4" id="continue"' in client.get("/").text


@pytest.fixture
def worker_client(
    tmp_path: Path, demo_worker: tuple[LocalWorker, str, str]
) -> Iterator[TestClient]:
    """An app on the shared test worker, whose demos run on real gloo ranks."""
    _, address, token = demo_worker
    settings = make_settings(tmp_path / "data", worker_address=address, worker_token=token)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.mark.demo
def test_running_the_step_s_demo_ticks_watch_it_run(worker_client: TestClient) -> None:
    register(worker_client)
    ring = pages_of(steps(worker_client.app.state.cards)[RING - 1])
    assert ring.demo
    run = worker_client.get(f"{ring.demo}/stream", params={"size_mib": 1, "iterations": 2})
    assert run.status_code == 200 and "Finished." in run.text
    assert _ticked(worker_client.get(f"/path/{RING}").text) == {"demo"}
