"""Helpers the tests share: free ports, per-test settings, a registered user."""

from __future__ import annotations

import re
import socket
from pathlib import Path

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
