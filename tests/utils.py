"""Helpers the tests share: free ports, per-test settings, a registered user, a served app."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import httpx
import uvicorn
import yaml
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy import URL, Engine
from sqlmodel import create_engine

from app.config import ROOT_DIR, Settings
from tests.pg_server import require_server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_under_test() -> str:
    """Which database the tests' settings use: SHARDLAB_TEST_DATABASE=sqlite (the default) or
    postgresql (a server this session starts, tests/pg_server.py)."""
    kind = os.environ.get("SHARDLAB_TEST_DATABASE") or "sqlite"
    if kind not in ("sqlite", "postgresql"):
        raise ValueError(f"SHARDLAB_TEST_DATABASE={kind!r}: use sqlite or postgresql")
    return kind


def one_slow_connection(url: URL) -> Engine:
    """The database at `url` behind a pool of one connection that waits 0.2 s for it: hold
    that connection and every read through this engine gives up, as a busy server's does."""
    sqlite = url.get_backend_name() == "sqlite"
    return create_engine(
        url, pool_size=1, max_overflow=0, pool_timeout=0.2,
        connect_args={"check_same_thread": False} if sqlite else {},
    )  # fmt: skip


def make_settings(data_dir: Path, *, migrated: bool = True, **overrides: object) -> Settings:
    """Settings for one test: its own database (a SQLite file in data_dir, or a PostgreSQL
    database of data_dir's own), and no worker unless one is given. The SQLite file starts at
    the newest migration, copied; `migrated=False` leaves it to the test (none there yet)."""
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
    if database_under_test() == "postgresql":
        values["database_url_setting"] = require_server().database_for(data_dir)
    values.update(overrides)
    settings = Settings(**values)
    if migrated and settings.database_kind == "sqlite":
        _start_at_the_newest_migration(settings.database_path)
    return settings


def _start_at_the_newest_migration(database: Path) -> None:
    """Gives a test's SQLite file, where it has none yet, the tables the migrations make, from
    a copy: the app's start then finds nothing to upgrade (27 ms instead of 350-600 ms, in
    each of a thousand apps). PostgreSQL's test databases are copies of a template already."""
    if not database.exists():
        database.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_migrated_sqlite_file(), database)


@cache
def _migrated_sqlite_file() -> Path:
    """A SQLite file at the newest migration, made once per test process by the migrations
    themselves (tests/test_upgrade.py tests them on fresh files of its own)."""
    from app.db import migrate  # the app's migrations, imported only when a test needs them

    folder = Path(tempfile.mkdtemp(prefix="shardlab-migrated-"))
    migrate(folder / "made.db")
    # The backup API copies a consistent file whatever the write-ahead log still holds.
    made, copy = sqlite3.connect(folder / "made.db"), sqlite3.connect(folder / "copy.db")
    try:
        made.backup(copy)
    finally:
        made.close()
        copy.close()
    return folder / "copy.db"


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
        # The app reads forwarded headers itself (app/proxy_headers.py), as in the image.
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            **{"proxy_headers": False, **config},
        )  # type: ignore[arg-type]  # fmt: skip
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


def dockerfile_command() -> list[str]:
    """The image's CMD, as the Dockerfile writes it (an exec-form JSON list)."""
    return json.loads(re.search(r"^CMD (\[.*\])$", (ROOT_DIR / "Dockerfile").read_text(), re.M)[1])


def image_command(port: int) -> list[str]:
    cmd = dockerfile_command()
    assert cmd[0] == "uvicorn"
    cmd[cmd.index("--host") + 1], cmd[cmd.index("--port") + 1] = "127.0.0.1", str(port)
    return [sys.executable, "-m", *cmd]


def compose_defaults() -> dict[str, str]:
    """compose.yaml's environment for the app with nothing set in the shell or .env."""
    spec = yaml.safe_load((ROOT_DIR / "compose.yaml").read_text())["services"]["app"]
    env = {}
    for name, value in spec["environment"].items():
        match = re.fullmatch(r"\$\{\w+:-(.*)\}", str(value))
        env[name] = match[1] if match else str(value)
    return {name: value for name, value in env.items() if value}


@contextmanager
def deployed_server(tmp_path: Path, **settings: str) -> Iterator[str]:
    """The image's server (its uvicorn command, in a process of its own) on a free port, with
    compose's environment plus `settings`; its base URL."""
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT_DIR),
        **compose_defaults(),
        "SHARDLAB_DATA_DIR": str(tmp_path / "data"),
        "SHARDLAB_WORKER_SPAWN": "false",
        "SHARDLAB_WORKER_ADDRESS": f"127.0.0.1:{free_port()}",
        "SHARDLAB_LOG_FORMAT": "text",
        **settings,
    }
    log_path = tmp_path / "server.log"
    # cwd: a folder without a .env, so only this environment counts.
    with log_path.open("w") as log:
        server = subprocess.Popen(
            image_command(port), env=env, cwd=tmp_path, stdout=log, stderr=log
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while not answers(f"{base}/healthz"):
            assert server.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.25)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def api_routes(routes: list, prefix: str = "") -> list[APIRoute]:
    """Every APIRoute of the app, including those of included routers (FastAPI 0.163 keeps
    them apart), each with its whole path: a router included inside another keeps its own
    prefix in its routes and the outer one in the include, so the walk puts them together."""
    found = []
    for route in routes:
        if isinstance(route, APIRoute):
            if prefix:
                route = copy.copy(route)
                route.path = prefix + route.path
            found.append(route)
        elif hasattr(route, "original_router"):
            context = getattr(route, "include_context", None)
            outer = getattr(context, "prefix", "") or ""
            found += api_routes(route.original_router.routes, prefix + outer)
    return found
