"""The training-memory calculator page, its live fragment, and the config.json reader."""

from __future__ import annotations

import json
from dataclasses import asdict
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.calc.gpus import GPUS
from app.calc.model import PRESETS
from app.calc.precision import OPTIMIZERS, RECIPES, bytes_per_param, conventions
from app.calc.training_query import LABELS, MODEL_FIELDS, TrainingQuery
from app.calculators.training_view import assumptions, training_view
from app.forms import parse_form
from app.templating import templates

router = APIRouter(prefix="/calculators", tags=["pages"], include_in_schema=False)

PAGE = "/calculators/training-memory"


def shareable_url(query: TrainingQuery) -> str:
    """The page's address holding every input, model fields included."""
    model = asdict(query.model())
    values = {
        name: model[name] if name in MODEL_FIELDS else getattr(query, name)
        for name in TrainingQuery.model_fields
    }
    # In the schema's order, so one set-up always has one address.
    encoded = {
        k: str(v).lower() if isinstance(v, bool) else v for k, v in values.items() if v is not None
    }
    return f"{PAGE}?{urlencode(encoded)}"


def _context(request: Request) -> tuple[dict[str, object], int]:
    raw = dict(request.query_params)
    query, errors = parse_form(TrainingQuery, raw, LABELS)
    options = {
        "presets": [("custom", "Custom"), *((k, v.name) for k, v in PRESETS.items())],
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
    return {
        "errors": [],
        "query": query,
        "model": model,
        "values": values,
        "view": training_view(query),
        "assumptions": assumptions(query),
        "conventions": conventions(),
        "share_url": shareable_url(query),
        "recipe_rows": [
            (
                name,
                label,
                bytes_per_param(name, query.optimizer),
                shareable_url(query.model_copy(update={"recipe": name})),
            )
            for name, label in RECIPES.items()
        ],  # fmt: skip
        **options,
    }, 200


@router.get("/training-memory", response_class=HTMLResponse)
def training_page(request: Request) -> HTMLResponse:
    context, status = _context(request)
    return templates.TemplateResponse(
        request, "calculators/training.html", context, status_code=status
    )


@router.get("/training-memory/result", response_class=HTMLResponse)
def training_fragment(request: Request) -> HTMLResponse:
    context, status = _context(request)
    response = templates.TemplateResponse(
        request, "calculators/_training_result.html", context, status_code=status
    )
    if status == 200:
        response.headers["HX-Replace-Url"] = str(context["share_url"])
    return response
