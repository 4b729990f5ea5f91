"""The communication calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.communication_query import CommunicationQuery, communication_result
from app.calculators.communication_view import gigabytes, seconds

# Llama 3 70B on 64 GPUs: dp 4, tp 8 (NVLink), pp 2 (InfiniBand), ZeRO-1, sequence parallel.
SCENARIO = {"preset": "llama3-70b", "dp": 4, "tp": 8, "pp": 2, "zero_stage": 1,
            "seq_len": 8192, "microbatches": 8}  # fmt: skip
API = "/api/calc/communication"
FRAGMENT = "/calculators/communication/result"


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = communication_result(CommunicationQuery(**SCENARIO))
    api = client.get(API, params=SCENARIO).json()
    assert api == json.loads(json.dumps(expected))
    args = ["communication", "--json"] + [
        f"--{k.replace('_', '-')}={v}" for k, v in SCENARIO.items()
    ]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/communication", params=SCENARIO).text
    assert re.search(rf'id="comm-total">{re.escape(seconds(api["comm_s"]))}<', page)
    assert f'id="bytes-total">{gigabytes(api["bytes_per_step"])}<' in page
    for strategy in ("dp", "tp", "pp"):
        assert f'data-strategy="{strategy}"' in page
    assert 'data-strategy="ep"' not in page  # ep = 1: nothing to send


def test_the_scenario_by_hand(client: TestClient) -> None:
    api = client.get(API, params=SCENARIO).json()
    tp = next(s for s in api["strategies"] if s["strategy"] == "tp")
    # 4 collectives x 40 layers x 8 micro-batches x 2 * 7/8 * (1 * 8192 * 8192) elements.
    assert tp["elements_per_step"] == 4 * 40 * 8 * 2 * 7 / 8 * 8192 * 8192
    assert tp["bytes_per_step"] == 2 * tp["elements_per_step"]  # bf16
    assert api["ring"] == {"ranks": 4, "share": 0.75, "all_reduce_factor": 1.5}
    assert api["step_s_perfect_overlap"] == max(api["compute_s"], api["comm_s"])
    assert api["step_s_no_overlap"] == api["compute_s"] + api["comm_s"]
    for row in api["collectives"]:
        assert row["formula"] and row["substituted"] and row["source"], row["label"]


def test_page_shows_ring_factor_and_chart(client: TestClient) -> None:
    page = client.get("/calculators/communication", params=SCENARIO).text
    assert r"\frac{3}{4} = 0.7500" in page and "= 1.5000" in page
    for bar in ("dp", "tp", "pp", "comm", "compute"):
        assert f'data-bar="{bar}"' in page
    assert "nccl-tests doc/PERFORMANCE.md" in page


def test_fragment_shares_a_url_holding_every_input(client: TestClient) -> None:
    fragment = client.get(FRAGMENT, params=SCENARIO)
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    for field in CommunicationQuery.model_fields:
        assert f"{field}=" in url
    again = client.get(url.replace("/communication?", "/communication/result?"))
    assert again.text == fragment.text


def test_api_is_documented_with_its_source(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    operation = schema["paths"][API]["get"]
    assert "arXiv:1910.02054" in operation["description"]
    assert "/calculators/communication" not in schema["paths"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"tp": 3}, "Tensor parallel (TP) must divide the 64 attention heads"),
        ({"pp": 100}, "cannot exceed the 80 layers"),
        ({"ep": 2}, "needs a mixture-of-experts model"),
        ({"cp": 3}, "Context parallel (CP) must divide the sequence length"),
        ({"dp": 0}, "Data parallel (DP): must be at least 1"),
        ({"seq_len": "long"}, "Sequence length: must be a whole number"),
        ({"compute_s": 0}, "Compute time per step (s): must be greater than 0"),
        ({"seq_len": 12}, "Sequence parallelism needs tp (8) to divide"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get(FRAGMENT, params={**SCENARIO, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    api = client.get(API, params={**SCENARIO, **params})
    assert api.status_code == 422


def test_cli_names_the_bad_option(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        cli(["communication", "--dp", "0"])
    assert exited.value.code == 2
    assert "--dp" in capsys.readouterr().err


fields = st.sampled_from(sorted(CommunicationQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 10**7).map(str),
    st.sampled_from(["true", "false", "", "nan", "inf", "1e400", "0.5", "mixtral-8x7b", "8",
                     "nvlink3", "fp8", "3"]),
)  # fmt: skip


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=5))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in (API, FRAGMENT):
        response = client.get(path, params={**SCENARIO, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])


def test_one_collective_on_the_page_api_and_cli(client: TestClient, capsys) -> None:
    params = {**SCENARIO, "collective": "reduce", "collective_ranks": 8, "collective_mb": 1000,
              "collective_link": "nvlink4"}  # fmt: skip
    api = client.get(API, params=params).json()
    one = api["collective"]
    # By hand: 7 * 3.4 us + 1e9 B / 450 GB/s = 2.24602 ms; busbw = 1e9 B / t * 1.
    assert one["collective"] == "reduce" and one["bus_factor"] == 1.0
    assert one["time_s"] == pytest.approx(2.24602e-3, rel=1e-5)
    assert one["source"].endswith("src/reduce.cu:36 ReduceGetBw")
    factors = {row["collective"]: row["bus_factor"] for row in api["all_collectives"]}
    assert factors == {"all_reduce": 1.75, "reduce_scatter": 0.875, "all_gather": 0.875,
                       "all_to_all": 0.875, "broadcast": 1.0, "reduce": 1.0, "gather": 0.875,
                       "scatter": 0.875}  # fmt: skip
    page = client.get("/calculators/communication", params=params).text
    assert 'id="bus-factors"' in page and 'data-collective="scatter"' in page
    assert '<tr data-collective="reduce" class="chosen">' in page
    assert r"\frac{2.2222 \times 10^{-3}" not in page  # the worked line keeps bytes over GB/s
    assert r"\frac{1 \times 10^{9}\,B}{450\,GB/s}" in page
    args = ["communication", "--collective", "reduce", "--collective-ranks", "8"]
    assert cli(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"reduce\s+1\.0000\s+1\.000\s+0\.002246\s+445\.2\s+445\.2 <", out)


def test_one_collective_refuses_zero_ranks(client: TestClient) -> None:
    fragment = client.get(FRAGMENT, params={**SCENARIO, "collective_ranks": 0})
    assert fragment.status_code == 422
    assert "Ranks N: must be at least 1" in fragment.text
