"""The card browser over HTTP on the fixture bank (issue #29): listing and each filter,
suspending (the review and practice never ask a suspended item, and their counts leave it out),
notes, bad input as a 422, and one learner's states never shown to another."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.quiz.browser import PAGE_SIZE, page_count, plain_prompt
from app.quiz.models import MockInterview
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT, STUDY_ORDER, answer
from tests.utils import log_out, register


def listed(page: str) -> list[str]:
    return re.findall(r'<tr id="row-[^"]+" class="browse-row state-\w+" data-item="([^"]+)"', page)


def state_of(page: str, item_id: str) -> str:
    match = re.search(rf'class="browse-row state-(\w+)" data-item="{item_id}"', page)
    assert match, page[:2000]
    return match.group(1)


def test_the_browser_needs_a_login(quiz_client: TestClient) -> None:
    response = quiz_client.get("/quiz/browse", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/login")


def test_every_item_is_listed_in_study_order_with_its_card_and_state(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    page = quiz_client.get("/quiz/browse")
    assert page.status_code == 200
    assert listed(page.text) == STUDY_ORDER
    assert "5 questions" in page.text
    assert all(state_of(page.text, item_id) == "new" for item_id in STUDY_ORDER)
    # The generated item's {inputs} read "…"; its card under its title, not its id.
    assert "A … model on … GPUs under …" in page.text
    assert '<a href="/cards/memory-anatomy">Memory anatomy of training' in page.text


def test_answers_show_as_states_due_dates_and_counts(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", option="1")  # wrong: in a learning step, one lapse
    answer(quiz_client, "fx-flash", rating="3")
    page = quiz_client.get("/quiz/browse").text
    assert state_of(page, "fx-single") == "learning"
    assert state_of(page, "fx-numeric") == "new"
    row = page[page.index('data-item="fx-single"') :]
    row = row[: row.index("</tr>")]
    assert "<time datetime=" in row and "1 / 1" in row


def test_the_search_reads_prompts_and_card_titles_case_insensitively(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    assert listed(quiz_client.get("/quiz/browse?q=16+BITS").text) == ["fx-multiple"]
    # "Mixed precision" is fx-multiple's card title, not in its prompt.
    by_title = listed(quiz_client.get("/quiz/browse?q=mixed+precision").text)
    assert "fx-multiple" in by_title
    assert listed(quiz_client.get("/quiz/browse?q=no+such+words").text) == []


def test_the_topic_and_state_filters(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-flash", **RIGHT["fx-flash"])
    assert listed(quiz_client.get("/quiz/browse?topic=zero-stages").text) == [
        "fx-generated", "fx-flash",
    ]  # fmt: skip
    assert listed(quiz_client.get("/quiz/browse?topic=zero-stages&state=new").text) == [
        "fx-generated"
    ]
    assert listed(quiz_client.get("/quiz/browse?state=review").text) == []
    assert listed(quiz_client.get("/quiz/browse?state=learning").text) == ["fx-flash"]


def suspend(client: TestClient, item_id: str, value: str = "1", **extra: str) -> object:
    return client.post(
        f"/quiz/browse/{item_id}/suspend",
        data={"suspended": value, **extra},
        follow_redirects=False,
    )


def test_a_suspended_item_is_never_asked_and_unsuspending_brings_it_back(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    assert shown_item(quiz_client.get("/quiz").text) == "fx-single"
    response = suspend(quiz_client, "fx-single", back="topic=memory-anatomy&state=new")
    # Back to the same filtered page.
    assert response.status_code == 303
    assert response.headers["location"] == "/quiz/browse?topic=memory-anatomy&state=new"
    page = quiz_client.get("/quiz/browse").text
    assert state_of(page, "fx-single") == "suspended"
    assert listed(quiz_client.get("/quiz/browse?state=suspended").text) == ["fx-single"]
    review = quiz_client.get("/quiz?topic=memory-anatomy").text
    assert shown_item(review) == "fx-numeric"
    assert shown_item(quiz_client.get("/quiz?mode=practice&topic=memory-anatomy").text) == (
        "fx-numeric"
    )
    suspend(quiz_client, "fx-single", "0")
    assert state_of(quiz_client.get("/quiz/browse").text, "fx-single") == "new"
    assert shown_item(quiz_client.get("/quiz").text) == "fx-single"


def test_a_suspended_due_item_is_left_out_of_the_review_and_its_counts(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    for item_id in STUDY_ORDER:
        suspend(quiz_client, item_id)
    # Nothing left to ask: the review ends at once, and practice has nothing either.
    assert 'id="all-done"' in quiz_client.get("/quiz").text
    assert 'name="item_id"' not in quiz_client.get("/quiz?mode=practice").text
    suspend(quiz_client, "fx-numeric", "0")
    page = quiz_client.get("/quiz").text
    assert shown_item(page) == "fx-numeric"
    # The progress bar counts the one unsuspended item as new, not the five.
    assert re.search(r"\b1 new\b", page), page[page.find("review-progress") :][:800]


def test_suspending_from_htmx_swaps_the_row(quiz_client: TestClient) -> None:
    register(quiz_client)
    row = quiz_client.post(
        "/quiz/browse/fx-flash/suspend", data={"suspended": "1"}, headers={"HX-Request": "true"}
    )
    assert row.status_code == 200
    assert row.text.lstrip().startswith("<tr") and 'data-item="fx-flash"' in row.text
    assert "state-suspended" in row.text and "Unsuspend" in row.text


def note(client: TestClient, item_id: str, text: str, htmx: bool = False) -> object:
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(
        f"/quiz/browse/{item_id}/note", data={"note": text}, headers=headers,
        follow_redirects=False,
    )  # fmt: skip


def test_a_note_is_kept_and_shown_escaped(quiz_client: TestClient) -> None:
    register(quiz_client)
    assert note(quiz_client, "fx-numeric", "  <b>2+2+12</b> & Adam  ").status_code == 303
    page = quiz_client.get("/quiz/browse").text
    assert '<p class="note-text">&lt;b&gt;2+2+12&lt;/b&gt; &amp; Adam</p>' in page
    assert "<b>2+2+12</b>" not in page
    # An empty note clears it.
    note(quiz_client, "fx-numeric", "")
    assert 'class="note-text"' not in quiz_client.get("/quiz/browse").text


def test_a_long_note_or_control_characters_are_refused(quiz_client: TestClient) -> None:
    register(quiz_client)
    too_long = note(quiz_client, "fx-numeric", "x" * 501)
    assert too_long.status_code == 422
    assert "a note is at most 500 characters" in too_long.text
    assert note(quiz_client, "fx-numeric", "x" * 500).status_code == 303
    for bad in ("a\x00b", "line\nbreak", "evil\u202etxt"):
        refused = note(quiz_client, "fx-single", bad, htmx=True)
        assert refused.status_code == 422, bad
        assert "control or text-direction characters" in refused.text
    assert 'class="note-text"' not in quiz_client.get("/quiz/browse?q=ZeRO+stage+1").text


def test_bad_input_is_a_422_never_a_500(quiz_client: TestClient) -> None:
    register(quiz_client)
    for query, words in (
        ("state=buried", "there is no state called"),
        ("page=2", "there is no page 2"),
        ("page=0", "there is no page 0"),
        ("page=two", "there is no page two"),
        ("page=99999999999999999999", "there is no page"),
        ("topic=no-such-card", "no card or tag called"),
    ):
        response = quiz_client.get(f"/quiz/browse?{query}")
        assert response.status_code == 422, query
        assert words in response.text, query
    for action in ("suspend", "note"):
        response = quiz_client.post(f"/quiz/browse/no-such-item/{action}", data={"note": "x"})
        assert response.status_code == 422
        assert "no quiz item called" in response.text


def test_another_learners_states_and_notes_are_never_shown(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    suspend(quiz_client, "fx-numeric")
    note(quiz_client, "fx-flash", "ada's secret")
    log_out(quiz_client)
    register(quiz_client, "bob")
    page = quiz_client.get("/quiz/browse").text
    assert all(state_of(page, item_id) == "new" for item_id in STUDY_ORDER)
    assert "ada's secret" not in page and "ada&#39;s secret" not in page
    assert shown_item(quiz_client.get("/quiz").text) == "fx-single"


def test_pages_of_fifty_rows() -> None:
    assert [page_count(n) for n in (0, 1, PAGE_SIZE, PAGE_SIZE + 1)] == [1, 1, 1, 2]


def test_a_prompt_is_shown_as_plain_text() -> None:
    assert (
        plain_prompt("Size of `{params}` in **bytes**,\n $2^{30}$?")
        == "Size of … in bytes, 2^{30}?"
    )


def test_a_mock_interview_draws_no_suspended_item(quiz_client: TestClient) -> None:
    register(quiz_client)
    suspend(quiz_client, "fx-single")
    # The fixture bank has four graded items; one is suspended.
    too_many = quiz_client.post("/mock", data={"questions": "4", "minutes": "5"})
    assert too_many.status_code == 422 and "has 3 graded questions" in too_many.text
    started = quiz_client.post("/mock", data={"questions": "3", "minutes": "5"})
    assert started.status_code == 200
    with Session(quiz_client.app.state.engine) as session:
        (mock,) = session.exec(select(MockInterview)).all()
    assert sorted(q["item_id"] for q in mock.questions) == ["fx-generated", "fx-multiple",
                                                            "fx-numeric"]  # fmt: skip


def test_a_stored_card_of_unknown_state_is_listed_not_a_failure() -> None:
    # Rows written before imports were checked may hold anything (issue #25, finding 7).
    from app.quiz.browser import state_name
    from app.quiz.models import ItemState

    for stored in ({"state": "2"}, {"state": None}, {"state": 9}, {}):
        state = ItemState(user_id=1, item_id="x", fsrs_card=stored)
        assert state_name(state, None) == "learning"
    assert state_name(ItemState(user_id=1, item_id="x", fsrs_card={"state": 2}), None) == "review"
