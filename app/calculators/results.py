"""The calculators' JSON answers, kept by their validated inputs.

A calculator is a pure function of its inputs (app.calc), so an answer computed once serves
everyone who asks the same question: the JSON is kept as the bytes FastAPI would send for the
route's response model, keyed on the query's validated fields, and sent as they are. The
same numbers asked another way (3e9 or 3000000000, fields in any order) are one answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.responses import Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.i18n import current_language
from app.page_cache import LruCache

# Answers are 1-100 KB (the planner's are the largest): the bound that matters is on bytes.
ANSWERS: LruCache[bytes] = LruCache(2048, 32_000_000, len)


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
    return Response(answer, media_type="application/json")
