"""Helpers the tests share: free ports, per-test settings, a registered user, a served app."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from fastapi.testclient import TestClient

from app.config import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    """Settings for one test: its own SQLite file, and no worker unless one is given."""
    values: dict[str, object] = {
        "data_dir": data_dir,
        "secret_key": "test-secret-key",
        "worker_spawn": False,
        "worker_address": f"127.0.0.1:{free_port()}",  # nothing listens: 'unavailable'
        "worker_token": "test-token",
        "worker_ranks": 2,
        # Tests launch many demos from one address; the limit's own test sets a small one.
        "demo_rate_limit": "1000/minute",
    }
    values.update(overrides)
    return Settings(**values)


def csrf_token(client: TestClient) -> str:
    """This client's session CSRF token, read from a page as a browser would see it."""
    page = client.get("/login")
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert match, "no csrf_token field on /login"
    return match.group(1)


def refresh_csrf(client: TestClient) -> str:
    """Sends the session's current token with every later request, as htmx does from <body>;
    call it again after logging in or out, which start a new session."""
    token = csrf_token(client)
    client.headers["X-CSRF-Token"] = token
    return token


def register(client: TestClient, username: str = "ada", password: str = "correct horse") -> None:
    response = client.post(
        "/register",
        data={"username": username, "password": password, "csrf_token": csrf_token(client)},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    refresh_csrf(client)


def log_in(client: TestClient, username: str, password: str = "correct horse") -> None:
    response = client.post(
        "/login",
        data={"username": username, "password": password, "csrf_token": csrf_token(client)},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    refresh_csrf(client)


def log_out(client: TestClient) -> None:
    client.post("/logout", data={"csrf_token": csrf_token(client)})
    refresh_csrf(client)


@contextmanager
def serving(app: object, startup_s: float = 30, **config: object) -> Iterator[str]:
    """The app served by uvicorn on a free port in a thread, for a browser; its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config)  # type: ignore[arg-type]
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_s
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
