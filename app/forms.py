"""Turning a form's query or body into a validated model, with messages a person can read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

Model = TypeVar("Model", bound=BaseModel)


def friendly_errors(exc: ValidationError, labels: Mapping[str, str]) -> list[str]:
    """'Data-parallel degree: must be at least 1' rather than pydantic's raw error list."""
    return error_messages(exc.errors(), labels)


def error_messages(errors: Iterable[Mapping[str, Any]], labels: Mapping[str, str]) -> list[str]:
    """friendly_errors for a list of pydantic error dicts (FastAPI's RequestValidationError
    holds such a list, not a ValidationError)."""
    messages = []
    for error in errors:
        field = str(error["loc"][0]) if error["loc"] else ""
        label = labels.get(field, field or "Input")
        ctx = error.get("ctx") or {}
        kind = error["type"]
        if kind == "greater_than":
            text = f"must be greater than {ctx['gt']:g}"
        elif kind == "greater_than_equal":
            text = f"must be at least {ctx['ge']:g}"
        elif kind == "less_than_equal":
            text = f"must be at most {ctx['le']:g}"
        elif kind in ("float_parsing", "float_type", "int_parsing", "int_type", "int_from_float"):
            text = "must be a whole number" if kind.startswith("int") else "must be a number"
        elif kind == "missing":
            text = "is required"
        elif kind == "value_error" and not error["loc"]:
            # A rule across fields (a model validator): its own words are the message.
            messages.append(str(ctx.get("error", error["msg"])))
            continue
        else:
            text = error["msg"][0].lower() + error["msg"][1:]
        messages.append(f"{label}: {text}")
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
