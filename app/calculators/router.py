"""Calculator pages (HTML) and the htmx fragment that updates them as you type."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.calculators.memory_view import stage_views
from app.calculators.schemas import MemoryForm
from app.forms import parse_form
from app.templating import templates

router = APIRouter(prefix="/calculators", tags=["pages"], include_in_schema=False)

MEMORY_LABELS = {"params_b": "Parameters (billions)", "dp_degree": "Data-parallel degree"}


@router.get("", response_class=HTMLResponse)
def calculators_index(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "calculators/index.html")


def _memory_context(request: Request) -> tuple[dict[str, object], int]:
    raw = dict(request.query_params)
    form, errors = parse_form(MemoryForm, raw, MEMORY_LABELS)
    if form is None:
        return {"errors": errors, "form": None, "raw": raw}, 422
    query = form.to_query()
    return {
        "errors": [],
        "form": form,
        "raw": raw,
        "query": query,
        "stages": stage_views(query),
    }, 200


@router.get("/memory", response_class=HTMLResponse)
def memory_page(request: Request) -> HTMLResponse:
    context, status = _memory_context(request)
    return templates.TemplateResponse(
        request, "calculators/memory.html", context, status_code=status
    )


@router.get("/memory/result", response_class=HTMLResponse)
def memory_result_fragment(request: Request) -> HTMLResponse:
    context, status = _memory_context(request)
    response = templates.TemplateResponse(
        request, "calculators/_memory_result.html", context, status_code=status
    )
    form = context["form"]
    if isinstance(form, MemoryForm):
        # The address bar follows the inputs, so a result can be shared as a link.
        shared = urlencode({"params_b": f"{form.params_b:g}", "dp_degree": form.dp_degree})
        response.headers["HX-Replace-Url"] = f"/calculators/memory?{shared}"
    return response
