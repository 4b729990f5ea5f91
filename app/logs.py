"""Logging: one line per request with its id, and plain text or JSON lines (a setting).

Every line logged while a request is handled carries that request's id, so a slow request
or an error can be followed through the log. The id is echoed in the X-Request-ID header.
Every line also names the host and process that wrote it: with several web processes
(uvicorn --workers, replicas in cohort mode) their logs interleave in one stream.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import re
import secrets
import socket
import sys
import time
from datetime import UTC, datetime

from starlette.types import ASGIApp, Message, Receive, Scope, Send

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

# Fields a request line carries besides the message; JSON lines put them at the top level.
REQUEST_FIELDS = ("method", "path", "status", "duration_ms", "client", "user_id")
_INCOMING_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

access_log = logging.getLogger("shardlab.access")


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
            "host": HOST,
            "process": record.process,
        }
        for field in REQUEST_FIELDS:
            if hasattr(record, field):
                line[field] = getattr(record, field)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


HOST = socket.gethostname()
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s pid=%(process)d [%(request_id)s] %(message)s"


def configure_logging(log_format: str, level: str) -> None:
    """Installs one handler on the root logger (again on each call, never twice) and routes
    uvicorn's own loggers through it; uvicorn's access log gives way to ours."""
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name("shardlab")
    handler.addFilter(_RequestIdFilter())
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "shardlab"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = []
        logger.propagate = True
    # Requests are logged once, by RequestLog, with the request id and the user.
    logging.getLogger("uvicorn.access").disabled = True


# Request ids need to be unique, not secret: a random prefix per process and a counter, rather
# than a system call for random bytes on every request.
_ID_PREFIX = secrets.token_hex(4)
_id_counter = itertools.count(1)


def _next_request_id() -> str:
    return f"{_ID_PREFIX}{next(_id_counter):08x}"


class RequestLog:
    """Outermost middleware but one (ProxyHeaders runs first, so the log names the client a
    trusted proxy forwarded): gives each request an id and logs method, path, status, time."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if _INCOMING_ID.match(incoming) else _next_request_id()
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500  # if the app raises before answering, the server sends a 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            session = scope.get("session") or {}
            client = scope.get("client")
            fields = {
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "duration_ms": duration_ms,
                "client": client[0] if client else None,
                "user_id": session.get("user_id"),
            }
            level = logging.ERROR if status >= 500 else logging.INFO
            access_log.log(
                level,
                "%s %s %s %.1fms",
                scope["method"],
                scope["path"],
                status,
                duration_ms,
                extra=fields,
            )
            request_id.reset(token)
