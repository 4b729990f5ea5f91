"""/quiz/compare: a free response beside its model answer, with the automatic checks and the
rubric to tick. Nothing is recorded here; the answer form it swaps into (review, practice or
a mock interview) records the answer with the points ticked."""

from __future__ import annotations

import re

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from app.errors import is_htmx
from app.forms import SubmittedForm
from app.i18n import gettext
from app.language import request_language
from app.quiz.answer_form import read_answer_form
from app.quiz.free_grading import auto_checks
from app.quiz.free_view import rubric_rows
from app.quiz.items import FreeResponseItem
from app.quiz.service import question_for
from app.route_guards import GuardedRoute
from app.templating import templates

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)

# Where the answer form records: only these pages' own answer routes (the form says which).
ANSWER_URL = re.compile(r"^/(?:quiz/answer|mock/\d{1,18}/answer|practice/answer(?:\?[\w=&%.-]*)?)$")
# The form's fields a page without script carries over to the recording form.
NOT_CARRIED = {"csrf_token", "response", "option", "compared", "answer_url"}


@router.post("/quiz/compare", response_class=HTMLResponse)
def compare(request: Request, form: SubmittedForm) -> HTMLResponse:
    fields = read_answer_form(form)
    bank, lang = request.app.state.quiz, request_language(request)
    item = bank.get(fields.item_id)
    if not isinstance(item, FreeResponseItem):
        raise HTTPException(422, gettext("no free-response item called '%(item)s'")
                            % {"item": fields.item_id})  # fmt: skip
    item = bank.in_language(item, lang)
    question = question_for(item)
    if not fields.response.strip():
        error = gettext("write or dictate your answer first")
        if is_htmx(request):
            return templates.TemplateResponse(
                request, "quiz/_free_error.html", {"answer_error": error}, status_code=422
            )
        raise HTTPException(422, error)
    context = {
        "question": question, "response": fields.response.strip(),
        "checks": auto_checks(item, fields.response),
        "rubric": rubric_rows(request.app.state.cards, item, lang),
        "submit_label": gettext("Record answer") if "/mock/" in str(form.get("answer_url")) else "",
    }  # fmt: skip
    if is_htmx(request):
        return templates.TemplateResponse(request, "quiz/_free_compare.html", context)
    answer_url = str(form.get("answer_url", "/quiz/answer"))
    if not ANSWER_URL.match(answer_url):
        answer_url = "/quiz/answer"
    carried = [(k, str(v)) for k, v in form.multi_items() if k not in NOT_CARRIED]
    return templates.TemplateResponse(
        request, "quiz/free_compare.html", {**context, "answer_url": answer_url, "carried": carried}
    )
