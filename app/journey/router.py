"""The home page (the path for a visitor, the dashboard for a learner), the steps of the path,
and the study plan.

A visitor's home page is the same for every visitor in a language: its main block is kept
(app/page_cache.py). A learner's pages read each row they need once, then hand the database
connection back before the page renders: the page's header opens a session of its own, and
requests that each hold one connection while they wait for a second starve the pool when many
learners load pages at once. The dashboard, the page every learner opens first, goes further
and reads in a session of its own, opened and closed in the route's thread: a connection taken
by a dependency stays held while the event loop hands the request on to the route, and a loop
that is itself waiting for a connection then never does."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES
from app.db import RequestSession, SessionDep
from app.forms import SubmittedForm, parse_form
from app.i18n import gettext
from app.journey.parts import parts_done
from app.journey.plan import (
    CALCULATOR_AND_DEMO_MINUTES,
    COMPRESSED_STEP_QUESTIONS,
    MINUTES_PER_QUESTION,
    MINUTES_PER_REVIEW,
    READING_WORDS_PER_MINUTE,
)
from app.journey.service import (
    GOAL_LABELS,
    GoalForm,
    goal_of,
    level_mastery,
    plan_for,
    position_of,
    position_with_goal,
    questions_to_finish,
    set_goal,
)
from app.journey.syllabus import LEVELS, STEP_QUESTIONS
from app.language import request_language
from app.page_cache import kept_or_made, kept_own_page, kept_page, own_page_at_once
from app.quiz.progress import progress_of, unchanged_until, weakest_topics
from app.quiz.review_queue import states_of
from app.route_guards import GuardedRoute
from app.security import SESSION_USER_KEY, CurrentUser, OptionalUser, optional_user
from app.templating import templates

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)


def _position(request: Request, session: SessionDep, user_id: int | None):  # noqa: ANN202
    state = request.app.state
    return position_of(session, user_id, state.quiz, state.cards, request_language(request))


DASHBOARD = "journey/dashboard.html"


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> HTMLResponse:
    """A visitor sees the path; a signed-in learner, where they are on it and what is due.
    Both are answered on the event loop while kept (app/page_cache.py): the visitor's page
    for every visitor, the dashboard for its learner until their progress changes or a
    number on it would change with the time."""
    key = (request.app.state.cards,)
    if not isinstance(request.session.get(SESSION_USER_KEY), int):
        return await kept_or_made(request, "index.html", key, _home)
    if (kept := own_page_at_once(request, DASHBOARD, key)) is not None:
        return kept
    return await run_in_threadpool(_home, request)


def _home(request: Request) -> HTMLResponse:
    state, lang = request.app.state, request_language(request)
    now = datetime.now(UTC)
    with RequestSession(state.engine) as session:  # not SessionDep: the module says why
        user = optional_user(request, session)
        if user is not None:
            assert user.id is not None
            goal = goal_of(session, user.id)
            position = position_with_goal(session, user.id, goal, state.quiz, state.cards, lang)
            # One read of the learner's item states serves both the progress and the plan, and
            # the progress's topics the plan's priorities.
            states = states_of(session, user.id)
            progress = progress_of(session, user.id, state.quiz, state.cards, now, states)
    if user is None:

        def values() -> tuple[dict[str, object], int, dict[str, str]]:
            position = position_of(None, None, state.quiz, state.cards, lang)
            return {"position": position, "levels": LEVELS}, 200, {}

        return kept_page(request, "index.html", (state.cards,), values)
    plan = None
    if goal:
        plan = plan_for(goal, position, state.quiz, state.cards, states, topics=progress.topics)
    titles = {c.meta.id: c.meta.title for c in state.cards.in_language(lang)}
    context = {
        "position": position,
        "levels": LEVELS,
        "progress": progress,
        "goal": goal,
        "plan": plan,
        "titles": titles,
        "mastery": level_mastery(progress, position),
        "weakest_topics": weakest_topics(progress.topics),
    }
    key = (state.cards,)
    return kept_own_page(request, DASHBOARD, key, context, unchanged_until(states, now))


@router.get("/start")
def start(request: Request, user: OptionalUser, session: SessionDep) -> RedirectResponse:
    """Start here: the first step not done yet (the first step for a visitor)."""
    position = _position(request, session, user.id if user else None)
    step = position.next_step or position.steps[0]
    return RedirectResponse(f"/path/{step.number}", status_code=303)


@router.get("/path/{number}", response_class=HTMLResponse)
def step_page(
    request: Request, number: int, user: OptionalUser, session: SessionDep
) -> HTMLResponse:
    position = _position(request, session, user.id if user else None)
    if not 1 <= number <= len(position.steps):
        steps = gettext("the path has steps 1 to %(last)s") % {"last": len(position.steps)}
        raise HTTPException(404, steps)
    step = position.steps[number - 1]
    after = position.steps[number] if number < len(position.steps) else None
    before = position.steps[number - 2] if number > 1 else None
    done = step.card_id in position.done
    # Ticks are a learner's own. A visitor's visits and answers are kept nowhere: they
    # practise on /practice, a learner in the quiz, where the answers count.
    parts = parts_done(session, user.id, step, done) if user and user.id else None
    session.close()  # every row is read: the connection goes back (the module says why)
    context = {"step": step, "after": after, "before": before, "position": position,
               "calculator": CALCULATOR_PAGES.get(step.calculator or ""),
               "demo": DEMO_PAGES.get(step.demo or ""),
               "questions": questions_to_finish(request.app.state.quiz, step.card_id,
                                                position.compressed),
               "questions_url": step.practice_url if user else step.visitor_practice_url,
               "parts": parts, "done": done,
               "next_to_do": position.next_after(step) if done else None}  # fmt: skip
    return templates.TemplateResponse(request, "journey/step.html", context)


def _plan_page(request: Request, session: SessionDep, user_id: int, status_code: int = 200,
               **extra: object) -> HTMLResponse:  # fmt: skip
    state = request.app.state
    goal = goal_of(session, user_id)
    position = position_with_goal(session, user_id, goal, state.quiz, state.cards,
                                  request_language(request))  # fmt: skip
    plan = None
    if goal:
        plan = plan_for(goal, position, state.quiz, state.cards, states_of(session, user_id))
    session.close()  # every row is read: the connection goes back (the module says why)
    titles = {s.card_id: s.card.meta.title for s in position.steps}
    short_titles = {s.card_id: s.card.meta.short_title for s in position.steps}
    numbers = {s.card_id: s.number for s in position.steps}
    pace = {"wpm": READING_WORDS_PER_MINUTE, "hands_on": CALCULATOR_AND_DEMO_MINUTES,
            "question": MINUTES_PER_QUESTION, "review": MINUTES_PER_REVIEW,
            "questions": STEP_QUESTIONS,
            "compressed_questions": COMPRESSED_STEP_QUESTIONS}  # fmt: skip
    context = {"goal": goal, "plan": plan, "titles": titles, "short_titles": short_titles,
               "numbers": numbers, "pace": pace, "today": datetime.now(UTC).date(),
               **extra}  # fmt: skip
    return templates.TemplateResponse(request, "journey/plan.html", context, status_code)


@router.get("/plan", response_class=HTMLResponse)
def plan_page(request: Request, user: CurrentUser, session: SessionDep) -> HTMLResponse:
    assert user.id is not None
    return _plan_page(request, session, user.id)


@router.post("/plan", response_class=HTMLResponse, response_model=None)
def plan_set(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    assert user.id is not None
    goal, errors = parse_form(GoalForm, form, GOAL_LABELS)
    if goal is None:
        return _plan_page(request, session, user.id, 422, errors=errors)
    set_goal(session, user.id, goal)
    return RedirectResponse("/plan", status_code=303)
