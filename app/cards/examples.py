"""Worked examples inside cards, computed by the calculators when the card renders.

A card writes
    ```example training-memory
    preset: llama3-70b
    tp: 8
    ```
and gets that calculator's own result (the same fragment its page shows, from the same
code) and a link to the calculator filled in with those inputs, so no figure a calculator
can compute is ever typed into a card. The block's fields are the calculator's input fields.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from urllib.parse import urlencode

import yaml
from pydantic import ValidationError
from starlette.requests import Request

from app.calculators.memory_view import stage_views
from app.calculators.schemas import MemoryQuery
from app.templating import templates


class ExampleError(ValueError):
    """A card's example block is malformed; raised while the card library loads."""


def _inputs(body: str) -> dict[str, object]:
    try:
        data = yaml.safe_load(body) or {}
    except yaml.YAMLError as exc:
        raise ExampleError(str(exc)) from exc
    if not isinstance(data, dict):
        raise ExampleError("an example block holds `field: value` lines")
    return data


def memory_example(body: str) -> str:
    try:
        query = MemoryQuery.model_validate(_inputs(body))
    except ValidationError as exc:
        raise ExampleError(str(exc)) from exc
    table = templates.get_template("calculators/_memory_breakdown.html").render(
        query=query, stages=stage_views(query), show_link=True
    )
    return f'<div class="worked-example">{table}</div>\n'


def _query_string(values: dict[str, object]) -> bytes:
    encoded = {k: str(v).lower() if isinstance(v, bool) else v for k, v in values.items()}
    return urlencode(encoded).encode()


def calculator_example(router_module: str, name: str) -> Callable[[str], str]:
    """Renders a calculator's result fragment for the block's inputs, via its page's own view."""

    def render(body: str) -> str:
        module = importlib.import_module(f"app.calculators.{router_module}")
        request = Request(
            {
                "type": "http",
                "method": "GET",
                "path": "/",
                "headers": [],
                "query_string": _query_string(_inputs(body)),
            }  # fmt: skip
        )
        context, status = module._context(request)
        if status != 200:
            raise ExampleError("; ".join(map(str, context.get("errors", []))) or "bad inputs")
        fragment = templates.get_template(f"calculators/_{name}_result.html").render(
            {**context, "request": request}
        )
        link = context["share_url"]
        return (
            f'<div class="worked-example">{fragment}'
            f'<p><a href="{link}">Open these numbers in the calculator →</a></p></div>\n'
        )

    return render


EXAMPLES: dict[str, Callable[[str], str]] = {
    "memory": memory_example,
    "training-memory": calculator_example("training_router", "training"),
    "communication": calculator_example("communication_router", "communication"),
    "pipeline": calculator_example("pipeline_router", "pipeline"),
    "compute": calculator_example("compute_router", "compute"),
    "roofline": calculator_example("roofline_router", "roofline"),
    "inference-memory": calculator_example("inference_router", "inference"),
    "failures": calculator_example("failures_router", "failures"),
}


def render_example(kind: str, body: str) -> str:
    if kind not in EXAMPLES:
        raise ExampleError(f"unknown example kind {kind!r}; known: {sorted(EXAMPLES)}")
    return EXAMPLES[kind](body)
