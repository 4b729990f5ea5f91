"""One app with its own local worker, shared by the demo route tests of this package.

Starting ranks costs seconds on two cores, so the route tests share one app; a test that
needs different settings (tests/live/test_worker_recovery.py) defines its own `app_client`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
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
