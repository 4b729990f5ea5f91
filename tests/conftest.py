"""Shared fixtures: settings on a temporary data dir, an app client with a real database
(SQLite, or PostgreSQL with SHARDLAB_TEST_DATABASE=postgresql), and the demo worker (one per
session)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings as hypothesis_settings

from app.config import Settings
from app.live.worker_process import LocalWorker
from app.main import create_app
from tests.pg_server import PostgresServer, require_server, running_server, stop_shared_server
from tests.utils import database_under_test, make_settings
from tests.worker_fixture import shared_test_worker

# CI replays the same examples every run, so a red build always means a change broke
# something; locally every run explores new inputs (run with CI=true to reproduce CI).
hypothesis_settings.register_profile("ci", derandomize=True, deadline=None)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def postgres() -> PostgresServer:
    """The session's PostgreSQL server, in either pass: for the tests of PostgreSQL itself.
    Skips where it cannot start, and fails under CI."""
    return require_server()


@pytest.fixture(autouse=True)
def _drop_test_databases() -> Iterator[None]:
    """Drops the PostgreSQL databases a test made once it ends (a thousand copies of the
    template would fill the disk). Fixtures of a wider scope made theirs before the test
    began, so theirs stay until the server stops."""
    server = running_server()
    made = server.made_count() if server else 0
    yield
    server = server or running_server()
    if server is not None:
        server.drop_made_since(made)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only: reads the SQLite file itself; skipped in the PostgreSQL pass"
    )


def pytest_sessionfinish() -> None:
    stop_shared_server()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def demo_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalWorker, str, str]]:
    """A ready worker's (process, address, token), started by the first test that asks."""
    with shared_test_worker(Path(tmp_path_factory.mktemp("worker"))) as started:
        yield started


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Playwright's sync API leaves an event loop running in the main thread once a browser
    # test has run, and asyncio.run() refuses to start under it: browser tests go last.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
    if database_under_test() == "postgresql":
        skip = pytest.mark.skip(reason="tests the SQLite file itself; the SQLite pass runs it")
        for item in items:
            if item.get_closest_marker("sqlite_only"):
                item.add_marker(skip)
