"""Numbers from a request are parsed with bounds (issue #25, finding 8): an id SQLite cannot
hold is a 404 like any missing row, and a non-finite number in JSON or a query is a 422 that
says which field. Each of these was a 500 (the answer form's timestamp: tests/quiz/
test_answer_form.py)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.admin.test_admin_page import _make_admin
from tests.utils import refresh_csrf, register

TOO_BIG = [2**63, 2**70, 10**40]


@pytest.mark.parametrize("key", TOO_BIG)
def test_a_group_id_sqlite_cannot_hold_is_not_found(client: TestClient, key: int) -> None:
    register(client)
    assert client.get(f"/groups/{key}").status_code == 404
    assert client.post(f"/groups/{key}/sharing", data={"share": "yes"}).status_code == 404
    assert client.post(f"/groups/{key}/leave").status_code == 404
    # and the largest id SQLite can hold is simply a group that is not there
    assert client.get(f"/groups/{2**63 - 1}").status_code == 404


@pytest.mark.parametrize("key", TOO_BIG)
def test_admin_ids_sqlite_cannot_hold_are_not_found(client: TestClient, key: int) -> None:
    register(client, "root")
    _make_admin(client, "root")
    refresh_csrf(client)
    disabled = client.post(f"/admin/users/{key}/disabled", data={"disabled": "true"})
    assert disabled.status_code == 404
    assert client.post(f"/admin/invites/{key}/revoke").status_code == 404


@pytest.mark.parametrize(
    ("field", "value", "spelled"),
    [
        ("nodes", "NaN", "NaN"),
        ("matmul_efficiency", "Infinity", "Infinity"),
        ("matmul_efficiency", "-Infinity", "-Infinity"),
        ("matmul_efficiency", "1e400", "Infinity"),  # Python's json reads it as inf
    ],
)
def test_non_finite_json_numbers_are_422_naming_the_field(
    client: TestClient, field: str, value: str, spelled: str
) -> None:
    body = f'{{"preset": "llama3-8b", "{field}": {value}}}'
    response = client.post(
        "/api/calc/planner", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", field] and error["input"] == spelled


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_query_numbers_are_422_on_the_api_and_the_page(
    client: TestClient, value: str
) -> None:
    api = client.get(f"/api/calc/compute?tokens={value}")
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["query", "tokens"]
    page = client.get(f"/calculators/planner?matmul_efficiency={value}")
    assert page.status_code == 422 and "finite" in page.text
