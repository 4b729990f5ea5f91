"""What every calculator page shares: the full page, the htmx fragment that re-renders the
result as the form changes, and the shareable address that fragment puts in the address bar."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.journey.visits import record_visit
from app.templating import templates

# A calculator's view of one request: the template context, and 200 or 422 for bad input.
# A 200 context holds "share_url", the address that reproduces the result.
Context = Callable[[Request], tuple[dict[str, object], int]]


def share_url(path: str, values: Mapping[str, object]) -> str:
    """`path?field=value&…` holding every input that is set, in the order given."""
    encoded = {
        k: str(v).lower() if isinstance(v, bool) else v for k, v in values.items() if v is not None
    }
    return f"{path}?{urlencode(encoded)}"


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
        values, status = context(request)
        return templates.TemplateResponse(
            request, f"calculators/{name}.html", values, status_code=status
        )

    def fragment(request: Request) -> HTMLResponse:
        values, status = context(request)
        response = templates.TemplateResponse(
            request, f"calculators/_{name}_result.html", values, status_code=status
        )
        if status == 200:
            response.headers["HX-Replace-Url"] = str(values["share_url"])
        return response

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
