"""The home page, the path's steps and the study plan, over HTTP with a real SQLite file."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from fsrs import Rating
from sqlalchemy import event
from sqlmodel import Session, select

from app.accounts.models import User
from app.journey.models import StudyGoal
from app.journey.plan import COMPRESSED_STEP_QUESTIONS
from app.journey.service import plan_priority, step_work
from app.journey.syllabus import LEVELS, steps, syllabus_order
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.review_queue import states_of
from app.quiz.scheduling import new_card, review
from tests.quiz.test_mastery import answer_items, topic_ids
from tests.utils import register


def in_days(n: int) -> str:
    return (datetime.now(UTC).date() + timedelta(days=n)).isoformat()


def test_a_visitor_sees_the_path_and_start_here_opens_step_one(client: TestClient) -> None:
    home = client.get("/").text
    assert 'id="start-here"' in home and 'id="path"' in home
    assert home.count(' data-card="') == len(syllabus_order())
    start = client.get("/start", follow_redirects=False)
    assert start.status_code == 303 and start.headers["location"] == "/path/1"
    step = client.get("/path/1").text
    assert syllabus_order()[0] in step and 'id="part-card"' in step
    assert 'id="part-questions"' in step and 'id="next-step"' in step


def test_a_step_links_its_calculator_and_demo(client: TestClient) -> None:
    number = syllabus_order().index("zero-stages") + 1
    page = client.get(f"/path/{number}").text
    # Each link names the step, so the page it opens leads back here.
    assert f'href="/cards/zero-stages?step={number}" id="part-card"' in page
    assert f'href="/calculators/memory?step={number}" id="part-calculator"' in page
    assert re.search(rf'href="/demos/[^"?]+\?step={number}" id="part-demo"', page)
    # Signed out, the questions are practised without an account; signed in, in the quiz.
    assert f'href="/practice?topic=zero-stages&amp;step={number}" id="part-questions"' in page
    register(client)
    page = client.get(f"/path/{number}").text
    assert 'href="/quiz?mode=practice&amp;topic=zero-stages" id="part-questions"' in page


def test_a_step_outside_the_path_is_a_404(client: TestClient) -> None:
    assert client.get("/path/0").status_code == 404
    assert client.get(f"/path/{len(syllabus_order()) + 1}").status_code == 404


def test_a_learner_sets_a_date_and_sees_a_plan_and_a_dashboard(client: TestClient) -> None:
    register(client)
    dashboard = client.get("/").text
    assert "Welcome back" in dashboard and 'id="set-a-date"' in dashboard
    assert 'id="mastery"' in dashboard and dashboard.count('role="listitem"') == 7
    plan = client.post("/plan", data={"interview_date": in_days(60), "minutes_per_day": "45"})
    assert plan.status_code == 200 and 'id="plan-fits"' in plan.text
    assert plan.text.count('class="calendar-day') == 60
    dashboard = client.get("/").text
    assert 'id="today"' in dashboard and "New:" in dashboard
    assert "Next mock interview: " + in_days(59) in dashboard


def test_a_plan_that_cannot_fit_warns_with_the_minutes_that_would(client: TestClient) -> None:
    register(client)
    page = client.post("/plan", data={"interview_date": in_days(5), "minutes_per_day": "30"}).text
    warning = re.search(r'id="plan-warning">(.*?)</p>', page, re.S)
    assert warning and "steps do not fit before the interview" in warning.group(1)
    assert re.search(r'id="plan-fits-at">at \d+ minutes a day everything fits', page)


def _left_out(page: str) -> tuple[list[str], str]:
    """The plan page's left-out steps (card ids, in order) and its totals."""
    line = re.search(r'<p id="plan-left-out">(.*?)</p>', page, re.S)
    total = re.search(r'<span id="left-out-total">([^<]+)</span>', page)
    assert line and total
    return re.findall(r'data-card="([^"]+)"', line.group(1)), total.group(1)


def _calendar(page: str) -> list[str]:
    """The steps on the plan's calendar, in order, as card ids."""
    calendar = re.search(r'<ol class="calendar" id="plan-calendar">.*?</ol>', page, re.S)
    assert calendar
    numbers = re.findall(r'<a href="/path/(\d+)">', calendar.group(0))
    return [syllabus_order()[int(n) - 1] for n in numbers]


def _plan(client: TestClient, days: int, minutes: int, compressed: bool = False) -> str:
    data = {"interview_date": in_days(days), "minutes_per_day": str(minutes),
            "compressed": "true" if compressed else "false"}  # fmt: skip
    response = client.post("/plan", data=data)
    assert response.status_code == 200
    return response.text


def test_45_minutes_for_14_days_plans_the_design_level_and_lists_what_is_left_out(
    client: TestClient,
) -> None:
    register(client)
    page = _plan(client, 14, 45)
    planned = _calendar(page)
    design = next(level for level in LEVELS if level.key == "design").cards
    assert set(design) <= set(planned)
    left_out, total = _left_out(page)
    assert left_out and sorted(planned + left_out) == sorted(syllabus_order())
    state = client.app.state
    work = {s.card_id: step_work(s, state.quiz, state.cards, False) for s in steps(state.cards)}
    minutes = round(sum(work[c].minutes for c in left_out))
    assert total == f"{len(left_out)} steps, {minutes} minutes"
    chinese = client.get("/plan?lang=zh").text
    assert "未排入：" in chinese and f"{len(left_out)} 步，{minutes} 分钟" in chinese
    assert re.search(r'id="plan-fits-at">每天 \d+ 分钟即可全部排下', chinese)
    # "At X minutes a day everything fits": X does, and a minute less does not.
    fits_at = re.search(r'id="plan-fits-at">at (\d+) minutes a day everything fits', page)
    assert fits_at
    needed = int(fits_at.group(1))
    assert 'id="plan-fits"' in _plan(client, 14, needed)
    assert _left_out(_plan(client, 14, needed - 1))[0]


def test_the_weakest_topics_are_kept_with_their_prerequisites_before_other_steps(
    client: TestClient,
) -> None:
    register(client)
    # The last step of the scale level answered wrong (58 % a week out), loss curves right
    # (81 %): both are kept ahead of the steps nobody has answered yet.
    answer_items(client, topic_ids(client, "faulty-nodes-and-hangs"), Rating.Again)
    answer_items(client, topic_ids(client, "loss-curves")[:1], Rating.Good)
    state = client.app.state
    with Session(state.engine) as session:
        user = session.exec(select(User)).one()
        assert user.id is not None
        first = plan_priority(state.quiz, state.cards, states_of(session, user.id),
                              datetime.now(UTC))  # fmt: skip
    design = next(level for level in LEVELS if level.key == "design").cards
    assert first == [*design, "faulty-nodes-and-hangs", "loss-curves"]
    page = _plan(client, 14, 45)
    planned, (left_out, _) = _calendar(page), _left_out(page)
    assert {"faulty-nodes-and-hangs", "loss-curves", *design} <= set(planned)
    # Its prerequisites come with it, ahead of it; an earlier step nobody answered is left out.
    for before in ("fault-tolerance", "torchrun-launch"):
        assert planned.index(before) < planned.index("faulty-nodes-and-hangs")
    assert "fsdp2" in left_out


def test_compressed_steps_are_remembered_and_one_is_done_with_fewer_answers(
    client: TestClient,
) -> None:
    register(client)
    page = _plan(client, 21, 45, compressed=True)
    assert 'id="plan-fits"' in page and 'id="plan-left-out"' not in page
    assert '<option value="true" selected>' in client.get("/plan").text
    with Session(client.app.state.engine) as session:
        goal = session.exec(select(StudyGoal)).one()
        assert goal.compressed and goal.minutes_per_day == 45
    first = syllabus_order()[0]
    bank = client.app.state.quiz
    items = [i for i in bank.for_cards([first]) if i.kind != "flashcard"]
    answer_items(client, [i.id for i in items[:COMPRESSED_STEP_QUESTIONS]], Rating.Good)
    assert client.get("/start", follow_redirects=False).headers["location"] == "/path/2"
    assert "Answer 2 of its questions right to finish the step." in client.get("/path/2").text
    assert first not in _calendar(client.get("/plan").text)
    # Whole steps again: the first step asks for its 5 answers, and is back in the plan.
    page = _plan(client, 14, 45)
    assert '<option value="true" selected>' not in page
    assert client.get("/start", follow_redirects=False).headers["location"] == "/path/1"


def test_bad_plan_input_is_a_422_that_says_what_is_wrong(client: TestClient) -> None:
    register(client)
    past = client.post("/plan", data={"interview_date": in_days(-1), "minutes_per_day": "60"})
    assert past.status_code == 422 and "the interview date must be after today" in past.text
    bad = client.post("/plan", data={"interview_date": "soon", "minutes_per_day": "5"})
    assert bad.status_code == 422
    assert "Interview date:" in bad.text and "Minutes per day: must be at least 10" in bad.text
    assert client.get("/plan").text.count('class="calendar-day') == 0  # nothing was saved


def test_the_plan_needs_a_signed_in_learner(client: TestClient) -> None:
    assert client.get("/plan", follow_redirects=False).headers["location"].startswith("/login")


def test_answering_a_cards_questions_finishes_its_step(client: TestClient) -> None:
    register(client)
    first = syllabus_order()[0]
    bank = client.app.state.quiz
    items = [i for i in bank.for_cards([first]) if i.kind != "flashcard"][:5]
    with Session(client.app.state.engine) as session:
        user_id = session.exec(QuizAttempt.metadata.tables["user"].select()).first().id
        for item in items:
            session.add(QuizAttempt(user_id=user_id, item_id=item.id, kind=item.kind,
                                    question_params={}, prompt="p", correct=True))  # fmt: skip
        session.commit()
    assert client.get("/start", follow_redirects=False).headers["location"] == "/path/2"
    assert 'id="step-done"' in client.get("/path/1").text
    assert f'class="path-step done" data-card="{first}"' in client.get("/").text


def _add_states(client: TestClient, dues: list[datetime]) -> None:
    """Item states of real bank items, one due at each of `dues`."""
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User)).one()
        for n, (item, due) in enumerate(zip(client.app.state.quiz.all(), dues, strict=False)):
            card = review(new_card(n + 1, due - timedelta(days=3)), Rating.Good,
                          due - timedelta(days=3))  # fmt: skip
            session.add(ItemState(user_id=user.id, item_id=item.id, fsrs_card=card.to_dict(),
                                  due=due, reviews=1))  # fmt: skip
        session.commit()


def test_reviews_due_now_and_by_the_end_of_today_add_up(client: TestClient) -> None:
    now = datetime.now(UTC)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
    if midnight - now < timedelta(minutes=2):
        pytest.skip("too close to midnight UTC for an item due later today")
    register(client)
    client.post("/plan", data={"interview_date": in_days(60), "minutes_per_day": "60"})
    later_today = now + (midnight - now) / 2
    _add_states(client, [now - timedelta(days=1), now - timedelta(hours=1), later_today,
                         midnight + timedelta(hours=1)])  # fmt: skip
    dashboard = client.get("/").text
    assert re.search(r'id="stat-due"><span class="stat-value">2</span>'
                     r'<span class="stat-label">reviews due now<', dashboard)  # fmt: skip
    assert "3 reviews due by the end of today, 2 of them now" in dashboard
    today = re.search(r'class="calendar-day today.*?</li>', client.get("/plan").text, re.S)
    assert today and "<li>3 reviews</li>" in today.group(0)


def test_the_dashboard_reads_item_states_once(client: TestClient) -> None:
    register(client)
    client.post("/plan", data={"interview_date": in_days(30), "minutes_per_day": "60"})
    _add_states(client, [datetime.now(UTC) - timedelta(hours=1)])
    statements: list[str] = []

    def record(conn, cursor, statement: str, *args: object) -> None:  # noqa: ANN001
        statements.append(statement)

    engine = client.app.state.engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        assert 'id="today-reviews"' in client.get("/").text
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert sum("FROM itemstate" in s for s in statements) == 1


def _weakest(dashboard: str) -> list[tuple[str, str]]:
    """The dashboard's weakest topics, in order: (card id, mastery shown)."""
    section = re.search(r'<section class="panel" id="weakest".*?</section>', dashboard, re.S)
    assert section
    return re.findall(r'<li data-card="([^"]+)">.*?<span class="mastery">([^<]+)</span>',
                      section.group(0), re.S)  # fmt: skip


def test_the_weakest_topics_are_the_studied_ones_of_lowest_mastery_first(
    client: TestClient,
) -> None:
    register(client)
    # Predicted recall a week out (tests/quiz/test_mastery.py): Again 58 %, Hard 75 %,
    # Good 81 %, Easy 91 %; roofline is never answered.
    ratings = {"memory-anatomy": Rating.Easy, "mixed-precision": Rating.Good,
               "zero-stages": Rating.Hard, "tensor-parallel": Rating.Again}  # fmt: skip
    for card_id, rating in ratings.items():
        answer_items(client, topic_ids(client, card_id), rating)
    dashboard = client.get("/").text
    lowest_first = [("tensor-parallel", "58%"), ("zero-stages", "75%"), ("mixed-precision", "81%")]
    assert _weakest(dashboard) == lowest_first
    every = len(topic_ids(client, "memory-anatomy"))  # the strongest topic, all answered
    assert f"({every} of {every} questions answered)" in dashboard


def test_the_dashboard_defines_mastery_and_counts_each_levels_questions_answered(
    client: TestClient,
) -> None:
    register(client)
    answer_items(client, topic_ids(client, "memory-anatomy")[:2], Rating.Good)
    answer_items(client, topic_ids(client, "mixed-precision")[:1], Rating.Again)
    dashboard = client.get("/").text
    definition = re.search(r'<small id="mastery-definition">(.*?)</small>', dashboard)
    assert definition and definition.group(1).startswith(
        "Mastery: the chance FSRS predicts that you recall a question a week from now, averaged"
        " over the questions you have answered;"
    )
    bank = client.app.state.quiz
    rows = {key: re.search(rf'data-level="{key}">(.*?)</div>', dashboard, re.S)
            for key in ("foundations", "memory")}  # fmt: skip
    foundations = len(bank.for_cards(list(LEVELS[0].cards)))
    assert rows["foundations"] and rows["memory"]
    # (2 x 81 % + 58 %) / 3 answered, whatever the level's other questions.
    assert f"3 of {foundations} answered" in rows["foundations"].group(1)
    assert '<span class="mastery">73%</span>' in rows["foundations"].group(1)
    assert '<span class="mastery">–</span>' in rows["memory"].group(1)
    chinese = client.get("/?lang=zh").text
    assert "掌握度：FSRS 预测你一周后仍能回忆起一道题的概率 (predicted recall)" in chinese
    assert f"{foundations} 题中已答 3 题" in chinese
