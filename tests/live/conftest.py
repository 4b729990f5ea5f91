"""One app with its own local worker, shared by the demo route tests of this package, and a
migrated database per test for the demo line's own tests.

Starting ranks costs seconds on two cores, so the route tests share one app; a test that
needs different settings (tests/live/test_worker_recovery.py) defines its own `app_client`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from app.db import make_engine
from app.main import create_app
from tests.live.line import database_url, migrated_sqlite_file
from tests.utils import free_port, make_settings


@pytest.fixture(scope="package")
def app_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = make_settings(
        Path(tmp_path_factory.mktemp("app")) / "data",
        worker_spawn=True,
        worker_address=f"127.0.0.1:{free_port()}",
    )
    with TestClient(create_app(settings)) as client:
        assert client.app.state.worker.wait_ready(60)
        yield client


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file at the newest migration, copied for each test that needs a database
    (migrating from nothing takes more than a second per test)."""
    return migrated_sqlite_file(tmp_path_factory.mktemp("migrated"))


@pytest.fixture
def line_engine(tmp_path: Path, migrated_sqlite: Path) -> Iterator[Engine]:
    """An engine on a migrated database of this test's own."""
    engine = make_engine(database_url(tmp_path / "data", migrated_sqlite))
    yield engine
    engine.dispose()
