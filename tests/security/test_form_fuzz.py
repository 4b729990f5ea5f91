"""hypothesis on the log-in and register forms: any text in any field, never a 5xx."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.main import create_app
from tests.utils import csrf_token, make_settings

FIELD = st.one_of(st.none(), st.text(max_size=60), st.text(alphabet="ab._-1", max_size=45))


@pytest.fixture(scope="module")
def form_client() -> Iterator[TestClient]:
    data = Path(tempfile.mkdtemp(prefix="shardlab-forms-")) / "data"
    # Limits high enough that the fuzzing is not throttled (the limits have their own tests).
    app = create_app(
        make_settings(data, login_rate_limit="100000/minute", register_rate_limit="100000/hour")
    )
    with TestClient(app) as client:
        yield client


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(["/login", "/register"]),
    username=FIELD,
    password=FIELD,
    next_=FIELD,
    with_token=st.booleans(),
)
def test_forms_never_answer_5xx(
    form_client: TestClient,
    path: str,
    username: str | None,
    password: str | None,
    next_: str | None,
    with_token: bool,
) -> None:
    form_client.cookies.clear()
    data = {
        k: v
        for k, v in (("username", username), ("password", password), ("next", next_))
        if v is not None
    }
    if with_token:
        data["csrf_token"] = csrf_token(form_client)
    response = form_client.post(path, data=data, follow_redirects=False)
    assert response.status_code < 500, response.text[:300]
    assert response.status_code in (303, 403, 422)
    if response.status_code == 303:
        location = response.headers["location"]
        assert location.startswith("/") and not location.startswith("//")
