"""Structured logs: one JSON line per request with its id, method, path, status and time."""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path

from fastapi.testclient import TestClient

from app.logs import JsonFormatter
from app.main import create_app
from tests.utils import make_settings, register


def test_json_lines_carry_the_request_fields(tmp_path: Path, capfd) -> None:
    settings = make_settings(tmp_path / "data", log_format="json")
    with TestClient(create_app(settings)) as client:
        register(client)
        capfd.readouterr()
        response = client.get("/cards", headers={"X-Request-ID": "abc123"})
    lines = [
        json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")
    ]
    access = [line for line in lines if line["logger"] == "shardlab.access"]
    assert access, lines
    line = access[-1]
    assert line["request_id"] == "abc123" == response.headers["x-request-id"]
    assert (line["method"], line["path"], line["status"]) == ("GET", "/cards", 200)
    assert line["user_id"] == 1 and line["duration_ms"] > 0 and line["level"] == "INFO"
    # Several web processes write one stream: each line names its host and process.
    assert line["process"] == os.getpid() and line["host"] == socket.gethostname()


def test_the_json_formatter_keeps_exceptions() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "failed %s", ("job",), sys.exc_info()
        )
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed job" and "ValueError: boom" in line["exception"]
