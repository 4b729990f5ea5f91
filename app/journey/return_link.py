"""The way back to the path from a page a step sent the learner to.

A step's links carry ?step=<n>. A page that is part of step n (its card, its calculator, its
demo, its practice) opened with that parameter shows a bar back to /path/<n>
(templates/journey/_back_to_step.html, in every page's layout). Anything else, a missing
step, one that is not a number or is off the path, or another step's page, shows no bar
and is never an error: the parameter is only a hint of where the learner came from."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from app.language import request_language

# The pages that practise a step's questions, which name its card by ?topic= (a visitor's
# practice page and where its answers are sent, app/quiz/practice_router.py).
PRACTICE_PATHS = ("/practice", "/practice/answer")
MAX_STEP_DIGITS = 4  # the path has tens of steps: a longer number is not one of them


@dataclass(frozen=True)
class BackToStep:
    number: int
    title: str  # the step's card, in the reader's language where its edition is written
    url: str


def back_to_step(request: Request) -> BackToStep | None:
    """The bar back to the step this page was opened from, or None (see the module's words)."""
    raw = request.query_params.get("step", "")
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_STEP_DIGITS):
        return None
    # Imported here: the card and calculator pages render through app.templating, which
    # imports this module to offer back_to_step to every template.
    from app.journey.parts import pages_of
    from app.journey.syllabus import step_at

    step = step_at(request.app.state.cards, int(raw), request_language(request))
    if step is None:
        return None
    pages = pages_of(step)
    path = request.url.path
    on_step_page = path in (pages.card, pages.calculator, pages.demo) or (
        path in PRACTICE_PATHS and request.query_params.get("topic") == step.card_id
    )
    if not on_step_page:
        return None
    return BackToStep(step.number, step.card.meta.title, f"/path/{step.number}")
