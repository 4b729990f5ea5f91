"""The roofline calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.roofline_query import RooflineQuery, roofline_result

MATMUL = {"op": "matmul", "b": "256", "d": "8192", "f": "8192", "gpu": "h100-sxm", "dtype": "bf16"}


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = roofline_result(RooflineQuery.model_validate(MATMUL))
    api = client.get("/api/calc/roofline", params=MATMUL).json()
    # 2*256*8192^2 / (2*(256*8192*2 + 8192^2)) = 240.94 FLOP/byte: memory-bound on H100 (295).
    assert api["intensity"] == pytest.approx(2 * 256 * 8192**2 / (2 * (2 * 256 * 8192 + 8192**2)))
    assert api["bound"] == "memory" and api["ridge"] == pytest.approx(295.34, abs=0.01)
    assert api == json.loads(json.dumps(expected))
    assert cli(["roofline", "--json"] + [f"--{k}={v}" for k, v in MATMUL.items()]) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/roofline", params=MATMUL).text
    assert f'id="intensity">{expected["intensity"]:.4g}<' in page
    assert 'id="bound" class="bad">memory-bound<' in page
    assert f"B = {expected['critical_batch']:,.1f}<" in page


def test_tpu_v5e_turns_compute_bound_near_240(client: TestClient) -> None:
    params = {**MATMUL, "gpu": "tpu-v5e", "d": "1000000", "f": "1000000"}
    api = client.get("/api/calc/roofline", params=params).json()
    assert api["critical_batch"] == pytest.approx(240.5, abs=0.5)  # "B > 240" for bf16 on v5e


def test_dot_product_is_memory_bound_everywhere(client: TestClient) -> None:
    api = client.get("/api/calc/roofline", params={"op": "dot", "n": "1000000"}).json()
    assert api["intensity"] == pytest.approx(0.5, rel=1e-5)
    assert api["bound"] == "memory" and api["critical_batch"] is None and api["sweep"] == []


def test_fragment_shares_a_url_and_shows_the_chart_data(client: TestClient) -> None:
    fragment = client.get("/calculators/roofline/result", params=MATMUL)
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    for field in RooflineQuery.model_fields:
        assert f"{field}=" in url
    assert 'id="roofline-chart" data-series=' in fragment.text
    assert client.get(url.replace("/roofline?", "/roofline/result?")).text == fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"b": "0"}, "Batch B (tokens): must be at least 1"),
        ({"d": "x"}, "D: must be a whole number"),
        ({"gpu": "tpu-v5e", "dtype": "fp32"}, "no published fp32 peak"),
        ({"op": "conv"}, "Operation: input should be"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get("/calculators/roofline/result", params={**MATMUL, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    assert client.get("/api/calc/roofline", params={**MATMUL, **params}).status_code == 422


fields = st.sampled_from(sorted(RooflineQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 10**13).map(str),
    st.sampled_from(["", "nan", "inf", "1e400", "dot", "elementwise", "fp8", "int8", "tpu-v5e",
                     "1.5", "0"]),
)  # fmt: skip


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in ("/api/calc/roofline", "/calculators/roofline/result"):
        response = client.get(path, params={**MATMUL, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])
