"""How many bytes a request body may carry: a small default, and more only on the routes that
take a file (issue #25, finding 1: a 3.3 MB JSON object of 300,000 keys held the server 16 s
while every other page waited).

The count is taken as the body arrives, so a client that sends no Content-Length, or a false
one, is stopped at the limit too. The refusal is an HTTPException raised where the route reads
its body, so it is answered like any other error: a 413 page, or JSON under /api/."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.i18n import gettext

KIB = 1024
MIB = 1024 * KIB
# Forms, calculator queries and Hugging Face config.json files are a few KiB.
DEFAULT_BODY_BYTES = 64 * KIB
# path -> bytes: each file-taking route's own cap on its file, plus the form around it.
LARGER_BODIES = {
    "/progress/import": 21 * MIB,  # app/quiz/progress_router.py, MAX_IMPORT_BYTES and form
    "/calculators/planner/calibrate": 512 * KIB,  # a runs file and pasted runs, 200 KB each
    "/api/calc/calibrate": 2 * MIB,  # up to MAX_RUNS runs as JSON
}


def body_limit_of(path: str) -> int:
    return LARGER_BODIES.get(path, DEFAULT_BODY_BYTES)


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        size = f"{limit // MIB} MiB" if limit >= MIB else f"{limit // KIB} KiB"
        detail = gettext("the request body is larger than this address takes (%(size)s)")
        super().__init__(413, detail % {"size": size})


def limit_request_bodies(app: ASGIApp) -> ASGIApp:
    """Middleware: a body past its route's limit ends the request with 413 when read."""

    async def limited(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        limit = body_limit_of(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length", b"")
        too_large_declared = declared.isdigit() and int(declared) > limit
        received = 0

        async def counted() -> Message:
            nonlocal received
            if too_large_declared:
                raise BodyTooLarge(limit)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        await app(scope, counted, send)

    return limited
