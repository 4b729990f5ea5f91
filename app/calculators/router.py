"""Calculator pages (HTML) and the htmx fragment that updates them as you type."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.calc.memory import ZERO_STAGE_NAMES, largest_model_all_stages, precision_recipe
from app.calc.precision import (
    FP8_SAVED_INPUT_SOURCE,
    OPTIMIZERS,
    RECIPES,
    bytes_per_param,
    fp8_gemm_peaks,
)
from app.calculators.api import memory_result
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.schemas import MemoryForm
from app.forms import parse_form, query_inputs
from app.i18n import N_
from app.page_cache import kept_page_async
from app.route_guards import GuardedRoute
from app.worked.memory import largest_model_latex, stage_views

router = APIRouter(
    route_class=GuardedRoute, prefix="/calculators", tags=["pages"], include_in_schema=False
)

MEMORY_LABELS = {
    "params_b": N_("Parameters (billions)"),
    "dp_degree": N_("Data-parallel degree"),
    "recipe": N_("Precision recipe"),
    "optimizer": N_("Optimizer"),
    "device_gb": N_("Device memory (GB)"),
    "reserve_gb": N_("Reserve for activations and buffers (GB)"),
    "gpus_per_node": N_("GPUs per node"),
    "largest_layer_m": N_("Largest layer (millions of parameters)"),
}


@router.get("", response_class=HTMLResponse)
async def calculators_index(request: Request) -> HTMLResponse:
    # The list is the same for everyone in a language: its main block is kept.
    return await kept_page_async(request, "calculators/index.html", (), lambda: ({}, 200, {}))


def _memory_context(request: Request) -> tuple[dict[str, object], int]:
    raw = query_inputs(request)
    form, errors = parse_form(MemoryForm, raw, MEMORY_LABELS)
    options = {"recipes": list(RECIPES.items()), "optimizers": list(OPTIMIZERS.items())}
    if form is None:
        return {"errors": errors, "form": None, "raw": {**MemoryForm().model_dump(), **raw},
                **options}, 422  # fmt: skip
    query = form.to_query()
    recipe = precision_recipe(query.recipe, query.optimizer)
    largest = largest_model_all_stages(
        query.device_gb * 1e9, query.dp_degree, recipe, query.reserve_gb * 1e9
    )
    shared = {
        "params_b": f"{form.params_b:g}",
        "dp_degree": form.dp_degree,
        "recipe": form.recipe,
        "optimizer": form.optimizer,
        "device_gb": f"{form.device_gb:g}",
        "reserve_gb": f"{form.reserve_gb:g}",
        "gpus_per_node": form.gpus_per_node,
        "largest_layer_m": f"{form.largest_layer_m:g}",
    }
    return {
        "errors": [],
        "form": form,
        "raw": raw,
        "query": query,
        "stages": stage_views(query.params, query.dp_degree, recipe),
        "result": memory_result(query),
        "largest": [(m, ZERO_STAGE_NAMES[m.zero_stage], largest_model_latex(m)) for m in largest],
        "bpp": bytes_per_param(query.recipe, query.optimizer),
        "fp8_peaks": fp8_gemm_peaks(),
        "fp8_saved_source": FP8_SAVED_INPUT_SOURCE,
        "share_url": share_url("/calculators/memory", shared),
        **options,
    }, 200


add_calculator_pages(router, "/memory", "memory", _memory_context)
