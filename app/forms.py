"""Turning a form's query or body into a validated model, with messages a person can read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import Depends
from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData
from starlette.requests import Request

from app.calc.messages import Message, words_of
from app.i18n import N_, gettext, ngettext, say, translate

Model = TypeVar("Model", bound=BaseModel)


def friendly_errors(exc: ValidationError, labels: Mapping[str, str]) -> list[str]:
    """'Data-parallel degree: must be at least 1' rather than pydantic's raw error list."""
    return error_messages(exc.errors(), labels)


def error_messages(errors: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> list[str]:
    """friendly_errors for a list of pydantic error dicts (FastAPI's RequestValidationError
    holds such a list, not a ValidationError).

    In the request's language: the labels are marked with N_() where they are defined and
    translated here, as are the words around them. A validator's own words (a rule across
    fields) come from the models: app.calc and the demos' specs raise them as a Message, said
    here in the reader's language. Only pages show these messages: the JSON API under /api/
    answers with FastAPI's own error list, in English."""
    messages = []
    for error in errors:
        field = str(error["loc"][0]) if error["loc"] else ""
        label = translate(labels.get(field, field or N_("Input")))
        ctx = error.get("ctx") or {}
        kind = error["type"]
        raised = ctx.get("error", error["msg"])
        words = words_of(raised) if isinstance(raised, BaseException) else str(raised)
        if kind == "greater_than":
            text = gettext("must be greater than %(n)s") % {"n": f"{ctx['gt']:g}"}
        elif kind == "greater_than_equal":
            text = gettext("must be at least %(n)s") % {"n": f"{ctx['ge']:g}"}
        elif kind == "less_than_equal":
            text = gettext("must be at most %(n)s") % {"n": f"{ctx['le']:g}"}
        elif kind in ("float_parsing", "float_type", "int_parsing", "int_type", "int_from_float"):
            whole = kind.startswith("int")
            text = gettext("must be a whole number") if whole else gettext("must be a number")
        elif kind == "finite_number":  # NaN or an infinity (app/calc/query_config.py)
            text = gettext("must be a finite number")
        elif kind == "missing":
            text = gettext("is required")
        elif kind == "string_too_short":
            n = ctx["min_length"]
            text = ngettext(
                "must be at least %(n)s character", "must be at least %(n)s characters", n
            ) % {"n": n}
        elif kind == "string_too_long":
            n = ctx["max_length"]
            text = ngettext(
                "must be at most %(n)s character", "must be at most %(n)s characters", n
            ) % {"n": n}
        elif kind == "string_pattern_mismatch":
            text = gettext("must match the pattern %(pattern)s") % {"pattern": ctx["pattern"]}
        elif kind == "value_error" and not error["loc"]:
            # A rule across fields (a model validator): its own words are the message.
            messages.append(say(words))
            continue
        elif kind == "value_error" and isinstance(words, Message):
            # A field's own rule, raised as a Message: not pydantic's "Value error, ..."
            text = say(words)
        else:
            text = error["msg"][0].lower() + error["msg"][1:]
        messages.append(gettext("%(label)s: %(problem)s") % {"label": label, "problem": text})
    return messages


def query_inputs(request: Request) -> dict[str, str]:
    """A GET form's inputs: every query parameter but ?lang=, which picks the page's language
    (app/language.py), so a shared link in Chinese opens the calculator with its defaults, and
    ?step=, the step of the path a page was opened from (app/journey/return_link.py)."""
    return {k: v for k, v in request.query_params.items() if k not in ("lang", "step")}


def parse_form(
    model: type[Model], data: Mapping[str, object], labels: Mapping[str, str]
) -> tuple[Model | None, list[str]]:
    """The validated model and no errors, or None and the messages to show beside the form."""
    cleaned = {k: v for k, v in data.items() if v != ""}
    try:
        return model.model_validate(cleaned), []
    except ValidationError as exc:
        return None, friendly_errors(exc, labels)


async def submitted_form(request: Request) -> FormData:
    """The request's form (Starlette caches it, so the CSRF check and the route share one
    parse). Reading it here lets the route be a plain `def`, which FastAPI runs in its thread
    pool: a save that waits on SQLite's lock (busy_timeout, app/db.py) then holds up one
    thread, not the event loop that answers every other request and the demos' streams."""
    return await request.form()


SubmittedForm = Annotated[FormData, Depends(submitted_form)]
