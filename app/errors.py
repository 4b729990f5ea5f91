"""Error pages: what went wrong in words and a way back, in the site's layout.

Who gets what, for an HTTPException, a request that fails validation, or a crash:
  a path under /api/               JSON, as FastAPI writes it ({"detail": ...})
  htmx (HX-Request: true)          _refusal.html, a fragment htmx 4 swaps in (it swaps 4xx/5xx)
  a browser (Accept: text/html)    templates/errors/<status>.html, or errors/error.html
  anything else (curl, scripts)    JSON, as FastAPI writes it
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import (
    http_exception_handler,
)
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.utils import is_body_allowed_for_status_code
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.forms import error_messages
from app.i18n import N_, gettext, translate
from app.logs import request_id
from app.templating import templates

log = logging.getLogger(__name__)

# Statuses with a page of their own; any other status gets errors/error.html.
PAGES = {404, 405, 422, 500, 503}
# Said when whoever raised the error gave no message of their own (only the status phrase).
# Marked with N_() and, like any detail a raise site marked, translated when a page shows them.
MESSAGES = {
    404: N_("There is no page at this address: the link may be old or mistyped."),
    422: N_("Some of what was sent could not be used:"),
    503: N_("This is not available just now."),
}


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def _wants_json(request: Request) -> bool:
    if request.url.path.startswith("/api/"):
        return True
    return not is_htmx(request) and "text/html" not in request.headers.get("accept", "")


def _fragment_or_page(
    request: Request,
    page: str,
    status: int,
    context: dict[str, object],
    headers: Mapping[str, str] | None = None,
) -> Response:
    template = "_refusal.html" if is_htmx(request) else page
    return templates.TemplateResponse(
        request, template, context, status_code=status, headers=headers
    )


def refusal(request: Request, message: str, status: int) -> Response:
    """A refused request (CSRF, rate limit) in words: JSON under /api/, a fragment for htmx, a
    page otherwise."""
    said = translate(message)  # marked with N_() or a Message: in the reader's language
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": str(said)}, status_code=status)
    return _fragment_or_page(request, "refused.html", status, {"message": said})


def _error_page(
    request: Request,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    **context: object,
) -> Response:
    """The error in the site's layout, or a fragment for htmx to swap in; never JSON."""
    page = f"errors/{status}.html" if status in PAGES else "errors/error.html"
    title = HTTPStatus(status).phrase
    context = {"status_code": status, "title": title, "message": message, **context}
    return _fragment_or_page(request, page, status, context, headers)


def _in_words(request: Request, exc: HTTPException) -> str:
    # Starlette's default detail is the bare status phrase: say more than "Not Found".
    if isinstance(exc.detail, str) and exc.detail != HTTPStatus(exc.status_code).phrase:
        detail = str(translate(exc.detail))  # already in the request's language, or marked
        return detail[:1].upper() + detail[1:]  # details are written to follow a colon
    if exc.status_code == 405:
        return gettext("This address does not take %(method)s requests.") % {
            "method": request.method
        }
    if exc.status_code in MESSAGES:
        return gettext(MESSAGES[exc.status_code])
    return f"{HTTPStatus(exc.status_code).phrase}."


async def _http_error(request: Request, exc: HTTPException) -> Response:
    if _wants_json(request) or not is_body_allowed_for_status_code(exc.status_code):
        return await http_exception_handler(request, exc)
    # Starlette's 405 names the methods the route takes in its Allow header.
    allow = (exc.headers or {}).get("Allow", "")
    allowed = [method.strip() for method in allow.split(",") if method.strip()]
    message = _in_words(request, exc)
    return _error_page(request, exc.status_code, message, exc.headers, allowed=allowed)


def _json_safe(value: Any) -> Any:
    """`value` with every non-finite float as the word JSON bodies spell it (NaN, Infinity):
    a 422 repeats the input it refuses, and JSON has no NaN to repeat it with."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return value


# A body of thousands of unknown fields is thousands of errors; the first few say what is
# wrong, and encoding them all held the server for most of a second (issue #25).
SHOWN_ERRORS = 20


async def _invalid_request(request: Request, exc: RequestValidationError) -> Response:
    shown = list(exc.errors()[:SHOWN_ERRORS])
    if _wants_json(request):
        return JSONResponse({"detail": _json_safe(jsonable_encoder(shown))}, status_code=422)
    # loc starts with where the field was (query, body, path); its name is what a person fixes.
    errors = [{**error, "loc": tuple(error["loc"][1:])} for error in shown]
    message = gettext(MESSAGES[422])
    return _error_page(request, 422, message, problems=error_messages(errors, {}))


def _server_error(request: Request) -> Response:
    if _wants_json(request):
        return JSONResponse({"detail": HTTPStatus(500).phrase}, status_code=500)
    message = gettext("Something went wrong on our side; it is logged as request %(id)s.") % {
        "id": request_id.get()
    }
    return _error_page(request, 500, message)


# What an error middleware answers with, given the request: the response, or None to let the
# error go on up (a response already half sent, or nothing to say about this error).
Answer = Callable[[Scope, Receive, BaseException], Response | None]


def _answering(app: ASGIApp, caught: type[BaseException], answer: Answer) -> ASGIApp:
    """`app`, with an error of type `caught` that escapes it answered by `answer`, unless
    the response had started: then only the server can end it (it drops the line)."""

    async def answering(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        started = False

        async def send_noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, send_noting_start)
        except caught as error:
            response = None if started else answer(scope, receive, error)
            if response is None:
                raise
            await response(scope, receive, send)

    return answering


# nginx's status for a request whose client closed the connection first; no client sees it.
CLIENT_CLOSED_REQUEST = 499


def unhandled_errors(app: ASGIApp) -> ASGIApp:
    """Middleware: an exception no handler took becomes the 500 page (or JSON), logged with
    its request. A database too busy to answer in time is not a crash: that error goes on up
    to answer_busy_database.

    Not an exception handler for Exception: Starlette runs that one in ServerErrorMiddleware,
    outside every middleware, so its log line would lack the request id and its page the
    session and the security headers.
    """

    def crashed(scope: Scope, receive: Receive, error: BaseException) -> Response | None:
        if database_busy(error):
            return None
        if isinstance(error, ClientDisconnect):
            # The client left before its request's body arrived (it gave up waiting): no one
            # to answer and nothing broken. Logged as nginx logs it, 499, not as a crash.
            log.info("client went away: %s %s", scope["method"], scope["path"])
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        log.exception("unhandled error in %s %s", scope["method"], scope["path"])
        return _server_error(Request(scope, receive))

    return _answering(app, Exception, crashed)


# How long a client is told to wait when every database connection stayed taken for as long as
# the pool waits (30 s): by then the server is overloaded, and asking again at once adds to it.
BUSY_RETRY_S = 5
BUSY_MESSAGE = N_("The site is very busy just now. Try again in a few seconds.")


def database_busy(error: BaseException) -> bool:
    """Whether `error` is the database too busy to answer in time, not a fault: no pooled
    connection within the pool's timeout (SQLAlchemy's TimeoutError), or SQLite's write lock
    still held by others when busy_timeout ran out ("database is locked"; the statement, and
    so its transaction, did not happen)."""
    if isinstance(error, PoolTimeout):
        return True
    return (
        isinstance(error, OperationalError)
        and isinstance(error.orig, sqlite3.OperationalError)
        and "locked" in str(error.orig)
    )


def answer_busy_database(app: ASGIApp) -> ASGIApp:
    """Middleware, outside the session and language ones (which read the database too): a
    request the database was too busy for (database_busy), in a route or a middleware, is
    answered 503 with Retry-After, the app's own back-pressure, not a 500. Plain text or
    JSON: the error page itself would read the database again.

    Found by bench/cohort.py: 500 learners on four web processes sharing two cores queued
    past the pool's timeout, and every such request was a 500; on the single box, answers
    that waited out SQLite's busy_timeout were 500s too."""

    def busy(scope: Scope, receive: Receive, error: BaseException) -> Response | None:
        if not database_busy(error):
            return None
        log.warning("the database was too busy (%s): %s %s answered 503",
                    type(error).__name__, scope["method"], scope["path"])  # fmt: skip
        said, headers = str(translate(BUSY_MESSAGE)), {"Retry-After": str(BUSY_RETRY_S)}
        if scope["path"].startswith("/api/") or not _accepts_html(scope):
            return JSONResponse({"detail": said}, status_code=503, headers=headers)
        return PlainTextResponse(said, status_code=503, headers=headers)

    return _answering(app, Exception, busy)


def _accepts_html(scope: Scope) -> bool:
    return b"text/html" in dict(scope["headers"]).get(b"accept", b"")


def register_error_pages(app: FastAPI) -> None:
    """Call before adding any other middleware: the 500 page is made inside all of them."""
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_middleware(unhandled_errors)
