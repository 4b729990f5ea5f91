"""Calculator pages (HTML) and the htmx fragment that updates them as you type."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.schemas import MemoryForm
from app.forms import parse_form, query_inputs
from app.i18n import N_
from app.templating import templates
from app.worked.memory import stage_views

router = APIRouter(prefix="/calculators", tags=["pages"], include_in_schema=False)

MEMORY_LABELS = {"params_b": N_("Parameters (billions)"), "dp_degree": N_("Data-parallel degree")}


@router.get("", response_class=HTMLResponse)
def calculators_index(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "calculators/index.html")


def _memory_context(request: Request) -> tuple[dict[str, object], int]:
    raw = query_inputs(request)
    form, errors = parse_form(MemoryForm, raw, MEMORY_LABELS)
    if form is None:
        return {"errors": errors, "form": None, "raw": raw}, 422
    query = form.to_query()
    shared = {"params_b": f"{form.params_b:g}", "dp_degree": form.dp_degree}
    return {
        "errors": [],
        "form": form,
        "raw": raw,
        "query": query,
        "stages": stage_views(query.params, query.dp_degree),
        "share_url": share_url("/calculators/memory", shared),
    }, 200


add_calculator_pages(router, "/memory", "memory", _memory_context)
