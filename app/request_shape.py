"""How many values a request may carry, beside how many bytes (app/body_limit.py): a JSON body's
items and nesting, and a query string's fields (issue #25, finding 1).

Bytes alone do not bound the work. FastAPI parses and validates a body on the event loop, and a
model that forbids unknown keys builds one error per key: 4,500 unknown keys in 53 KB held the
loop 75 ms a request, so a few clients sending them in turn kept every other page waiting (a
plain GET /cards took 0.74 s at the median). A query string of 1,500 unknown fields (11 KB, near
the longest URL the HTTP parser takes) cost 50 ms the same way. Every form, calculator query and
Hugging Face config.json a person sends is far inside the limits below.

The check of a JSON body is cheap when it can be: counting its commas and brackets in C bounds
its items and its depth from above, and only a body over a limit on that count is parsed (in a
worker thread, off the event loop) to count exactly, since commas inside strings count too.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.i18n import gettext

# Items: every value in the document, containers included. The planner's query, the largest
# calculator query, has 45 fields; a Hugging Face config.json a few hundred values at most.
MAX_JSON_ITEMS = 512
LARGER_JSON_ITEMS = {
    "/api/calc/model/from-hf-config": 4096,  # a config.json, read as a plain dict
    "/api/calc/calibrate": 4096,  # up to 50 runs of about 20 fields each
}
MAX_JSON_DEPTH = 32  # a config.json nests 3 or 4 deep
# A calculator page's query carries its model's fields (45 at most) and the page's own few.
MAX_QUERY_FIELDS = 200


def json_items_of(path: str) -> int:
    return LARGER_JSON_ITEMS.get(path, MAX_JSON_ITEMS)


class ShapeRefused(HTTPException):
    def __init__(self, detail: str) -> None:
        super().__init__(422, detail)


def _too_many_items(limit: int) -> ShapeRefused:
    detail = gettext("the JSON body holds more than %(limit)s values, more than this address takes")
    return ShapeRefused(detail % {"limit": limit})


def _too_deep() -> ShapeRefused:
    detail = gettext("the JSON body nests more than %(limit)s levels deep")
    return ShapeRefused(detail % {"limit": MAX_JSON_DEPTH})


def _counted(document: Any) -> tuple[int, int]:
    """(values, depth) of a parsed document, walked without recursion."""
    items, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        items += 1
        deepest = max(deepest, depth)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return items, deepest


def _exact_shape(body: bytes) -> tuple[int, int] | None:
    """(values, depth) of a body, or None when it is not JSON (FastAPI then says why)."""
    try:
        document = json.loads(body)
    except RecursionError:  # deeper than the interpreter's recursion limit
        return 0, MAX_JSON_DEPTH + 1
    except ValueError:
        return None
    return _counted(document)


async def check_json_shape(body: bytes, max_items: int) -> None:
    """Raises ShapeRefused if the body holds more values than max_items or nests too deep."""
    opened = body.count(b"[") + body.count(b"{")
    at_most = opened + body.count(b",") + 1
    if at_most <= max_items and opened <= MAX_JSON_DEPTH:
        return
    shape = await anyio.to_thread.run_sync(_exact_shape, body)
    if shape is None:
        return
    items, depth = shape
    if depth > MAX_JSON_DEPTH:
        raise _too_deep()
    if items > max_items:
        raise _too_many_items(max_items)


def _is_json(scope: Scope) -> bool:
    content_type = dict(scope["headers"]).get(b"content-type", b"")
    media_type = content_type.split(b";", 1)[0].strip().lower()
    return media_type == b"application/json" or media_type.endswith(b"+json")


def limit_json_shapes(app: ASGIApp) -> ASGIApp:
    """Middleware: a JSON body is read whole when the route first reads it, and refused with
    422 there if its shape is past the limits; otherwise the route reads it unchanged."""

    async def limited(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            return await app(scope, receive, send)
        max_items = json_items_of(scope["path"])
        delivered = False

        async def whole_body() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            chunks: list[bytes] = []
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return message  # the client went away
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            delivered = True
            body = b"".join(chunks)
            await check_json_shape(body, max_items)
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, whole_body, send)

    return limited


def too_many_query_fields() -> ShapeRefused:
    """The refusal of a query string of more than MAX_QUERY_FIELDS fields, counted on the raw
    bytes before anything parses them (app/route_guards.py)."""
    detail = gettext("the address holds more than %(limit)s query fields")
    return ShapeRefused(detail % {"limit": MAX_QUERY_FIELDS})
