"""The training-memory calculator page, its live fragment, and the config.json reader."""

from __future__ import annotations

import json
from dataclasses import asdict

from fastapi import APIRouter, Request

from app.calc.gpus import GPUS
from app.calc.model import PRESETS, ModelConfig
from app.calc.precision import OPTIMIZERS, RECIPES, bytes_per_param, conventions
from app.calc.training_query import LABELS, MODEL_FIELDS, TrainingQuery
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.training_view import training_view
from app.forms import parse_form, query_inputs
from app.i18n import N_
from app.route_guards import GuardedRoute
from app.worked.training import assumptions

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/training-memory"


def shareable_url(query: TrainingQuery) -> str:
    """The page's address holding every input, model fields included."""
    return share_url(PAGE, _inputs(query, query.model()))


def _inputs(query: TrainingQuery, model: ModelConfig) -> dict[str, object]:
    """Every input in the schema's order, the model's fields (`model`: query.model()) as the
    preset fills them in."""
    shape = asdict(model)
    return {
        name: shape[name] if name in MODEL_FIELDS else getattr(query, name)
        for name in TrainingQuery.model_fields
    }


def page_context(request: Request) -> tuple[dict[str, object], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
    raw = query_inputs(request)
    query, errors = parse_form(TrainingQuery, raw, LABELS)
    options = {
        "presets": [("custom", N_("Custom")), *((k, v.name) for k, v in PRESETS.items())],
        "recipes": list(RECIPES.items()),
        "optimizers": list(OPTIMIZERS.items()),
        "gpus": [(k, g.name) for k, g in GPUS.items()],
        "preset_json": json.dumps(
            {k: {f: getattr(v, f) for f in MODEL_FIELDS} for k, v in PRESETS.items()}
        ),
    }
    if query is None:
        return {"errors": errors, "query": None, "values": raw, **options}, 422
    model = query.model()
    values = query.model_dump()
    values.update({k: v for k, v in asdict(model).items() if k in MODEL_FIELDS})
    # The inputs once for the page's address and each recipe row's (the recipe is no field of
    # the model): building the model again for every row was a quarter of the context's time.
    inputs = _inputs(query, model)
    return {
        "errors": [],
        "query": query,
        "model": model,
        "values": values,
        "view": training_view(query),
        "assumptions": assumptions(query),
        "conventions": conventions(),
        "share_url": share_url(PAGE, inputs),
        "recipe_rows": [
            (
                name,
                label,
                bytes_per_param(name, query.optimizer),
                share_url(PAGE, {**inputs, "recipe": name}),
            )
            for name, label in RECIPES.items()
        ],
        **options,
    }, 200


add_calculator_pages(router, PAGE, "training", page_context)
