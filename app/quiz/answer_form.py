"""What an answer form sends, read the same way for review, practice and mock interviews."""

from __future__ import annotations

import time
from dataclasses import dataclass

from starlette.datastructures import FormData

from app.quiz.free_grading import MAX_RESPONSE_CHARS


@dataclass(frozen=True)
class AnswerForm:
    item_id: str
    answer: str
    picked: set[int]
    rating: int | None
    duration_s: float | None
    hinted: bool
    response: str = ""  # a free response, as typed or dictated
    compared: bool = False  # the free response was set beside the model answer (its rubric shown)


def _int_or_none(value: object) -> int | None:
    text = str(value)
    if len(text) > SHOWN_AT_DIGITS:  # an option, a rating or a time: none is this long
        return None
    try:
        return int(text)
    except ValueError:
        return None


# shown_at is milliseconds since 1970 (13 digits until the year 2286): longer is not a time,
# and dividing hundreds of digits overflows a float.
SHOWN_AT_DIGITS = 15


def read_answer_form(form: FormData) -> AnswerForm:
    """The fields every kind's form may send; what a kind needs is checked when grading."""
    shown_at = _int_or_none(form.get("shown_at", ""))
    duration = None
    if shown_at is not None:
        duration = time.time() - shown_at / 1000
        duration = duration if 0 <= duration < 86400 else None  # a clock skew or an old tab
    picked = {i for i in (_int_or_none(v) for v in form.getlist("option")) if i is not None}
    return AnswerForm(
        item_id=str(form.get("item_id", ""))[:100],
        answer=str(form.get("answer", ""))[:100],
        picked=picked,
        rating=_int_or_none(form.get("rating", "")),
        duration_s=duration,
        hinted=form.get("hinted") == "1",
        response=str(form.get("response", ""))[:MAX_RESPONSE_CHARS],
        compared=form.get("compared") == "1",
    )
