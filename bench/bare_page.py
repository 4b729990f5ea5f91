"""The floor bench/load.py measures ShardLab against: a bare FastAPI app with one 20 KB HTML
page and nothing else (no middleware, no templates, no database).

Served by the same uvicorn command as the app, on another port:

    .venv/bin/python -m uvicorn --factory --app-dir bench bare_page:create_app --port 8001
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

PAGE_BYTES = 20_000
_LINE = "<p>A paragraph of a bare page, the same on every request, for the load bench.</p>\n"


def page_html(size_bytes: int = PAGE_BYTES) -> str:
    """An HTML document of exactly `size_bytes` bytes (ASCII, so characters are bytes)."""
    head, tail = (
        "<!doctype html>\n<html><head><title>bare</title></head><body>\n",
        "</body></html>\n",
    )
    body_bytes = size_bytes - len(head) - len(tail)
    body = (_LINE * (body_bytes // len(_LINE) + 1))[:body_bytes]
    return head + body + tail


def create_app() -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    html = page_html()

    # A plain def, like ShardLab's page routes: FastAPI runs it in its thread pool. The bench
    # compares against this one.
    @app.get("/", response_class=HTMLResponse)
    def bare_page() -> HTMLResponse:
        return HTMLResponse(html)

    # The same page from a coroutine, on the event loop: the framework's very floor, shown
    # beside the other for reference.
    @app.get("/async", response_class=HTMLResponse)
    async def bare_page_async() -> HTMLResponse:
        return HTMLResponse(html)

    return app
