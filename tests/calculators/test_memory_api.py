"""The memory calculator over HTTP: JSON API, page, htmx fragment, and bad input."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.memory import model_states_per_gpu


def test_api_matches_the_calculator(client: TestClient) -> None:
    response = client.get("/api/calc/memory", params={"params": 7.5e9, "dp_degree": 64})
    assert response.status_code == 200
    body = response.json()
    assert [s["zero_stage"] for s in body["stages"]] == [0, 1, 2, 3]
    for stage in body["stages"]:
        expected = model_states_per_gpu(7.5e9, 64, stage["zero_stage"])
        assert stage["total_bytes"] == expected.total_bytes
        assert stage["optimizer_bytes"] == expected.optimizer_bytes
    assert body["bytes_per_param"] == {"weights": 2, "grads": 2, "optimizer": 12}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"params": -5, "dp_degree": 8}, "params"),
        ({"params": 0, "dp_degree": 8}, "params"),
        ({"params": 1e30, "dp_degree": 8}, "params"),
        ({"params": "seven", "dp_degree": 8}, "params"),
        ({"params": "nan", "dp_degree": 8}, "params"),
        ({"params": 7e9, "dp_degree": 0}, "dp_degree"),
        ({"params": 7e9, "dp_degree": 2.5}, "dp_degree"),
        ({"params": 7e9, "dp_degree": 10**9}, "dp_degree"),
        ({"params": 7e9}, "dp_degree"),
    ],
)
def test_api_bad_input_is_a_422_naming_the_field(
    client: TestClient, query: dict, field: str
) -> None:
    response = client.get("/api/calc/memory", params=query)
    assert response.status_code == 422
    assert field in {str(loc) for error in response.json()["detail"] for loc in error["loc"]}


def test_api_is_in_the_openapi_schema(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    operation = schema["paths"]["/api/calc/memory"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"params", "dp_degree"}
    assert "MemoryResult" in schema["components"]["schemas"]


def test_page_renders_the_default_example(client: TestClient) -> None:
    page = client.get("/calculators/memory")
    assert page.status_code == 200
    assert "31.41 GB" in page.text and 'hx-get="/calculators/memory/result"' in page.text


def test_fragment_follows_the_inputs_and_shares_a_url(client: TestClient) -> None:
    fragment = client.get("/calculators/memory/result", params={"params_b": 70, "dp_degree": 8})
    assert fragment.status_code == 200
    assert "<html" not in fragment.text
    expected = model_states_per_gpu(70e9, 8, 3).total_bytes / 1e9
    assert f"{expected:,.2f} GB" in fragment.text
    assert fragment.headers["HX-Replace-Url"] == "/calculators/memory?params_b=70&dp_degree=8"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"params_b": "-1", "dp_degree": "8"}, "Parameters (billions): must be greater than 0"),
        ({"params_b": "abc", "dp_degree": "8"}, "Parameters (billions): must be a number"),
        ({"params_b": "7", "dp_degree": "0"}, "Data-parallel degree: must be at least 1"),
        ({"params_b": "7", "dp_degree": "1.5"}, "Data-parallel degree: must be a whole number"),
    ],
)
def test_fragment_bad_input_is_an_inline_message(
    client: TestClient, query: dict, message: str
) -> None:
    fragment = client.get("/calculators/memory/result", params=query)
    assert fragment.status_code == 422
    assert message in fragment.text
    assert "HX-Replace-Url" not in fragment.headers


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params_b=st.text(max_size=12), dp_degree=st.text(max_size=12))
def test_no_typed_input_makes_the_form_fail(
    client: TestClient, params_b: str, dp_degree: str
) -> None:
    response = client.get(
        "/calculators/memory/result", params={"params_b": params_b, "dp_degree": dp_degree}
    )
    assert response.status_code in (200, 422)
