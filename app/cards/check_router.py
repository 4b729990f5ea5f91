"""Answering a card's "Check yourself" box (issue #29): graded like a quiz answer, and for a
signed-in learner recorded like one (FSRS and mastery move); for anyone else shown, not kept.

htmx swaps the result into the box; a plain form gets a page with the box and a way back."""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.calc.messages import words_of
from app.cards.check import CardPart, SectionCheck, card_parts, check_at
from app.cards.models import Card
from app.cards.service import CardLibrary
from app.db import SessionDep
from app.errors import is_htmx
from app.forms import SubmittedForm
from app.i18n import gettext, say
from app.language import request_language
from app.quiz.answer_form import read_answer_form
from app.quiz.bank import QuestionBank
from app.quiz.grading import AnswerError
from app.quiz.router import question_from_form
from app.quiz.service import grade, record_answer
from app.route_guards import GuardedRoute
from app.security import OptionalUser
from app.templating import templates

router = APIRouter(
    route_class=GuardedRoute, prefix="/cards", tags=["pages"], include_in_schema=False
)


def card_checks(request: Request, card: Card) -> list[CardPart]:
    """The card's html cut after each checked section, with the box that goes there, asked in
    the request's language."""
    library: CardLibrary = request.app.state.cards
    original = library.get(card.meta.id) or card
    return card_parts(card, original.sections, request.app.state.quiz, request_language(request))


# The card page's route (app/cards/router.py) knows nothing of the boxes: its template asks.
templates.env.globals["card_checks"] = card_checks


def _section_position(value: object) -> int | None:
    text = str(value)
    return int(text) if text.isdecimal() and len(text) <= 3 else None


def _check_of(request: Request, card: Card, section: object) -> SectionCheck:
    """The box the form was sent from; HTTP 422 if the card has none after that section."""
    position = _section_position(section)
    check = None if position is None else check_at(card_checks(request, card), position)
    if check is None:
        why = gettext("this card has no check after section '%(section)s'")
        raise HTTPException(422, why % {"section": str(section)[:20]})
    return check


@router.post("/{card_id}/check", response_class=HTMLResponse)
def check_answer(
    request: Request, card_id: str, session: SessionDep, user: OptionalUser, form: SubmittedForm
) -> HTMLResponse:
    library: CardLibrary = request.app.state.cards
    bank: QuestionBank = request.app.state.quiz
    lang = request_language(request)
    card = library.shown_in(card_id, lang)
    if card is None:
        raise HTTPException(422, gettext("no card called '%(card)s'") % {"card": card_id[:80]})
    check = _check_of(request, card, form.get("section", ""))
    fields = read_answer_form(form)
    if fields.item_id != check.question.item.id:  # another card's item, or a stale page
        why = gettext("'%(item)s' is not the question this card asks after that section")
        raise HTTPException(422, why % {"item": fields.item_id})
    question = question_from_form(bank, form, fields.item_id, lang)  # 422 for edited inputs
    # Its options in the order the box showed them (question_from_form shuffles them afresh).
    question = replace(question, option_order=check.question.option_order)
    partial = is_htmx(request)
    context: dict[str, object] = {
        "card": card, "check": replace(check, question=question), "partial": partial,
    }  # fmt: skip
    template = "cards/_check_result.html" if partial else "cards/check.html"
    try:
        # No answer time: the box has been on the page since the card opened, so the time
        # since then is reading time, which would rate every right answer Hard.
        outcome = grade(question, fields.answer, fields.picked, fields.rating, None, fields.hinted)
    except AnswerError as exc:
        context["answer_error"] = say(words_of(exc))
        return templates.TemplateResponse(request, template, context, status_code=422)
    context["outcome"] = outcome
    if user is not None:
        _attempt, context["state"] = record_answer(session, user, question, outcome)
    return templates.TemplateResponse(request, template, context)
