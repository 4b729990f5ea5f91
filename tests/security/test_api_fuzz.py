"""schemathesis against the OpenAPI schema: every documented operation, generated inputs
(valid and not), and never a 5xx."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from app.main import create_app
from tests.utils import make_settings

# The schema is read when pytest collects this module, so the app is made here.
_data_dir = Path(tempfile.mkdtemp(prefix="shardlab-fuzz-")) / "data"
app = create_app(make_settings(_data_dir))
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.fixture(scope="module", autouse=True)
def _running_app() -> Iterator[None]:
    with TestClient(app):  # runs the lifespan: the database exists, as in production
        yield


@schema.parametrize()
@settings(max_examples=30, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_with_a_server_error(case) -> None:
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
