"""Worked examples inside cards, computed by the calculators when the card renders.

A card writes
    ```example memory
    params: 7.5e9
    dp_degree: 64
    ```
and gets the calculator's table and substituted formulas in its place, so no figure a
calculator can compute is ever typed into a card.
"""

from __future__ import annotations

from collections.abc import Callable

import yaml
from pydantic import BaseModel, ValidationError

from app.calculators.memory_view import stage_views
from app.calculators.schemas import MemoryQuery
from app.templating import templates


class ExampleError(ValueError):
    """A card's example block is malformed; raised while the card library loads."""


def _inputs(model: type[BaseModel], body: str) -> BaseModel:
    try:
        data = yaml.safe_load(body) or {}
        return model.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise ExampleError(str(exc)) from exc


def memory_example(body: str) -> str:
    query = _inputs(MemoryQuery, body)
    assert isinstance(query, MemoryQuery)
    table = templates.get_template("calculators/_memory_breakdown.html").render(
        query=query, stages=stage_views(query), show_link=True
    )
    return f'<div class="worked-example">{table}</div>\n'


EXAMPLES: dict[str, Callable[[str], str]] = {"memory": memory_example}


def render_example(kind: str, body: str) -> str:
    if kind not in EXAMPLES:
        raise ExampleError(f"unknown example kind {kind!r}; known: {sorted(EXAMPLES)}")
    return EXAMPLES[kind](body)
