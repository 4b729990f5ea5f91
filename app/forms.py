"""Turning a form's query or body into a validated model, with messages a person can read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from app.i18n import N_, gettext, translate

Model = TypeVar("Model", bound=BaseModel)


def friendly_errors(exc: ValidationError, labels: Mapping[str, str]) -> list[str]:
    """'Data-parallel degree: must be at least 1' rather than pydantic's raw error list."""
    return error_messages(exc.errors(), labels)


def error_messages(errors: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> list[str]:
    """friendly_errors for a list of pydantic error dicts (FastAPI's RequestValidationError
    holds such a list, not a ValidationError).

    In the request's language: the labels are marked with N_() where they are defined and
    translated here, as are the words around them. A rule across fields (a model validator)
    keeps its own words, which come from the models. Only pages show these messages: the JSON
    API under /api/ answers with FastAPI's own error list."""
    messages = []
    for error in errors:
        field = str(error["loc"][0]) if error["loc"] else ""
        label = translate(labels.get(field, field or N_("Input")))
        ctx = error.get("ctx") or {}
        kind = error["type"]
        if kind == "greater_than":
            text = gettext("must be greater than %(n)s") % {"n": f"{ctx['gt']:g}"}
        elif kind == "greater_than_equal":
            text = gettext("must be at least %(n)s") % {"n": f"{ctx['ge']:g}"}
        elif kind == "less_than_equal":
            text = gettext("must be at most %(n)s") % {"n": f"{ctx['le']:g}"}
        elif kind in ("float_parsing", "float_type", "int_parsing", "int_type", "int_from_float"):
            whole = kind.startswith("int")
            text = gettext("must be a whole number") if whole else gettext("must be a number")
        elif kind == "missing":
            text = gettext("is required")
        elif kind == "value_error" and not error["loc"]:
            # A rule across fields (a model validator): its own words are the message.
            messages.append(str(ctx.get("error", error["msg"])))
            continue
        else:
            text = error["msg"][0].lower() + error["msg"][1:]
        messages.append(gettext("%(label)s: %(problem)s") % {"label": label, "problem": text})
    return messages


def query_inputs(request: Request) -> dict[str, str]:
    """A GET form's inputs: every query parameter but ?lang=, which picks the page's language
    (app/language.py), so a shared link in Chinese opens the calculator with its defaults."""
    return {k: v for k, v in request.query_params.items() if k != "lang"}


def parse_form(
    model: type[Model], data: Mapping[str, object], labels: Mapping[str, str]
) -> tuple[Model | None, list[str]]:
    """The validated model and no errors, or None and the messages to show beside the form."""
    cleaned = {k: v for k, v in data.items() if v != ""}
    try:
        return model.model_validate(cleaned), []
    except ValidationError as exc:
        return None, friendly_errors(exc, labels)
