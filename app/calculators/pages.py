"""What every calculator page shares: the full page, the htmx fragment that re-renders the
result as the form changes, and the shareable address that fragment puts in the address bar.

A calculator is a pure function of its inputs: the page's main block and the fragment are
rendered once per inputs and language and kept (app/page_cache.py), so a study group that
opens the same link, or types the same numbers, is answered from the kept HTML."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.forms import query_inputs
from app.journey.visits import record_visit
from app.page_cache import kept_fragment, kept_page

# A calculator's view of one request: the template context, and 200 or 422 for bad input.
# A 200 context holds "share_url", the address that reproduces the result.
Context = Callable[[Request], tuple[dict[str, object], int]]


def share_url(path: str, values: Mapping[str, object]) -> str:
    """`path?field=value&…` holding every input that is set, in the order given."""
    encoded = {
        k: str(v).lower() if isinstance(v, bool) else v for k, v in values.items() if v is not None
    }
    return f"{path}?{urlencode(encoded)}"


def inputs_key(request: Request) -> tuple[tuple[str, str], ...]:
    """Everything a calculator's context reads from the request (app.forms.query_inputs), in
    one order: the same inputs in another order are the same page."""
    return tuple(sorted(query_inputs(request).items()))


def add_calculator_pages(
    router: APIRouter,
    path: str,
    name: str,
    context: Context,
    slot: Callable[..., Any] | None = None,
) -> None:
    """`GET path` renders calculators/<name>.html; `GET path/result` renders the
    calculators/_<name>_result.html fragment and points the address bar at the inputs.

    `slot`: a dependency that holds one of the few heavy-work slots (app/heavy_work.py) while
    the context computes for long (the planner's search)."""

    def page(request: Request) -> HTMLResponse:
        record_visit(request)

        def values() -> tuple[dict[str, object], int, dict[str, str]]:
            return (*context(request), {})

        return kept_page(request, f"calculators/{name}.html", inputs_key(request), values)

    def fragment(request: Request) -> HTMLResponse:
        def values() -> tuple[dict[str, object], int, dict[str, str]]:
            found, status = context(request)
            replace_url = {"HX-Replace-Url": str(found["share_url"])} if status == 200 else {}
            return found, status, replace_url

        template = f"calculators/_{name}_result.html"
        return kept_fragment(request, template, inputs_key(request), values)

    for route, endpoint, suffix in ((path, page, "page"), (f"{path}/result", fragment, "result")):
        router.add_api_route(
            route,
            endpoint,
            methods=["GET"],
            response_class=HTMLResponse,
            include_in_schema=False,
            name=f"{name}_{suffix}",
            dependencies=[Depends(slot)] if slot else None,
        )
