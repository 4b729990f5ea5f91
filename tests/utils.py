"""Helpers the tests share: free ports, per-test settings, a registered user."""

from __future__ import annotations

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
    }
    values.update(overrides)
    return Settings(**values)


def register(client: TestClient, username: str = "ada", password: str = "correct horse") -> None:
    response = client.post(
        "/register", data={"username": username, "password": password}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
