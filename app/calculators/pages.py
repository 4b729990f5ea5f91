"""What every calculator page shares: the full page, the htmx fragment that re-renders the
result as the form changes, and the shareable address that fragment puts in the address bar.

A calculator is a pure function of its inputs: the page's main block and the fragment are
rendered once per inputs and language and kept (app/page_cache.py), so a study group that
opens the same link, or types the same numbers, is answered from the kept HTML."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from app.forms import query_inputs
from app.journey.visits import record_visit, visit_is_kept
from app.page_cache import kept_fragment, kept_fragment_at_once, kept_or_made, kept_page

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
    slot: Callable[[Request], AbstractAsyncContextManager[None]] | None = None,
) -> None:
    """`GET path` renders calculators/<name>.html; `GET path/result` renders the
    calculators/_<name>_result.html fragment and points the address bar at the inputs.

    `slot(request)`: held around the thread pool's work when the answer is not kept (the
    planner's heavy-work slot, app/heavy_work.py, while it searches); a kept answer needs
    none, nor the parsing of the inputs that deciding on one takes."""

    page_template = f"calculators/{name}.html"
    fragment_template = f"calculators/_{name}_result.html"

    # Answers kept whole (and no visit to write) are sent from the event loop; the rest is
    # computed and rendered in the thread pool.
    async def page(request: Request) -> HTMLResponse:
        return await kept_or_made(
            request,
            page_template,
            inputs_key(request),
            make_page,
            at_once=visit_is_kept(request),
            around=slot,
        )

    def make_page(request: Request) -> HTMLResponse:
        record_visit(request)

        def values() -> tuple[dict[str, object], int, dict[str, str]]:
            return (*context(request), {})

        return kept_page(request, page_template, inputs_key(request), values)

    async def fragment(request: Request) -> HTMLResponse:
        kept = kept_fragment_at_once(request, fragment_template, inputs_key(request))
        if kept is not None:
            return kept
        async with slot(request) if slot else nullcontext():
            return await run_in_threadpool(make_fragment, request)

    def make_fragment(request: Request) -> HTMLResponse:
        def values() -> tuple[dict[str, object], int, dict[str, str]]:
            found, status = context(request)
            replace_url = {"HX-Replace-Url": str(found["share_url"])} if status == 200 else {}
            return found, status, replace_url

        return kept_fragment(request, fragment_template, inputs_key(request), values)

    for route, endpoint, suffix in ((path, page, "page"), (f"{path}/result", fragment, "result")):
        router.add_api_route(
            route,
            endpoint,
            methods=["GET"],
            response_class=HTMLResponse,
            include_in_schema=False,
            name=f"{name}_{suffix}",
        )
