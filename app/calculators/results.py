"""The calculators' JSON answers, kept by their validated inputs.

A calculator is a pure function of its inputs (app.calc), so an answer computed once serves
everyone who asks the same question: the JSON is kept as the bytes FastAPI would send for the
route's response model, keyed on the query's validated fields, and sent as they are. The
same numbers asked another way (3e9 or 3000000000, fields in any order) are one answer.

An answer is also kept under the exact address it was asked with, and RepeatedQueries sends it
for that address before FastAPI parses the query: a shared link asked again costs a lookup, not
the parsing of up to 45 fields into a model (the planner's: 3.2 ms a request)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from fastapi.responses import Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from app.i18n import current_language
from app.page_cache import LruCache

# Answers are 1-100 KB (the planner's are the largest): the bound that matters is on bytes.
ANSWERS: LruCache[bytes] = LruCache(2048, 32_000_000, len)

# The same answers under the addresses they were asked with (language, path, query string);
# mostly the very bytes ANSWERS holds, but bounded on their own in case they are not.
ASKED: LruCache[bytes] = LruCache(4096, 32_000_000, len)
API_PREFIX = "/api/calc/"
_asked_as: ContextVar[tuple[str, str, bytes] | None] = ContextVar("asked_as", default=None)


async def kept_answer(
    name: str, query: BaseModel, model: type[BaseModel], compute: Callable[[], Any]
) -> Response:
    """`compute()`'s answer as `model` serialises it, computed once per validated `query`.
    A query `compute` refuses raises as it would, and nothing is kept for it. A kept answer
    is sent from the event loop; computing one (milliseconds, the planner's search seconds)
    runs in the thread pool."""
    # The API answers in English; the language is in the key all the same, so that an answer
    # with words in it is never served in another language than it was computed in.
    key = (name, current_language(), query.model_dump_json())

    def serialised() -> bytes:
        return model.model_validate(compute()).model_dump_json(by_alias=True).encode()

    answer = ANSWERS.get(key)
    if answer is None:
        answer = await run_in_threadpool(ANSWERS.get_or_make, key, serialised)
    if (address := _asked_as.get()) is not None:
        ASKED.get_or_make(address, lambda: answer)
    return Response(answer, media_type="application/json")


class RepeatedQueries:
    """Pure ASGI, inside the router: a GET of a calculator's API at an address whose answer
    kept_answer has kept is answered with it at once; any other request passes, and a GET
    under /api/calc/ notes its address, for kept_answer to keep its answer under."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            return await self.app(scope, receive, send)
        if not scope["path"].startswith(API_PREFIX):
            return await self.app(scope, receive, send)
        address = (current_language(), scope["path"], scope.get("query_string", b""))
        answer = ASKED.get(address)
        if answer is not None:
            return await Response(answer, media_type="application/json")(scope, receive, send)
        token = _asked_as.set(address)
        try:
            await self.app(scope, receive, send)
        finally:
            _asked_as.reset(token)
