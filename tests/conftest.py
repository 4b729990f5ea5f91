"""Shared fixtures: settings on a temporary data dir, and an app client with real SQLite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings as hypothesis_settings

from app.config import Settings
from app.main import create_app
from tests.utils import make_settings

# CI replays the same examples every run, so a red build always means a change broke
# something; locally every run explores new inputs (run with CI=true to reproduce CI).
hypothesis_settings.register_profile("ci", derandomize=True, deadline=None)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Playwright's sync API leaves an event loop running in the main thread once a browser
    # test has run, and asyncio.run() refuses to start under it: browser tests go last.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
