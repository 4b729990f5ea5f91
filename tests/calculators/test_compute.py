"""The compute & time calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.compute_query import ComputeQuery, compute_result

# Megatron's 1T-parameter example (arXiv:2104.04473, §5.1): 84 days on 3072 A100s.
ONE_T = {"preset": "custom", "params": "1008e9", "layers": "128", "hidden": "25600",
         "vocab": "51200", "tokens": "450e9", "mode": "training_recompute", "batch": "3072",
         "gpus": "3072", "utilization": str(163 / 312),
         "measured_tokens_per_s": "60000", "achieved_flops_per_gpu": "163e12"}  # fmt: skip


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = compute_result(ComputeQuery.model_validate(ONE_T))
    api = client.get("/api/calc/compute", params=ONE_T).json()
    assert api["total_flops"] == expected["total_flops"] == 8 * 1008e9 * 450e9
    assert round(api["time_days"]) == 84
    args = ["compute", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in ONE_T.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/compute", params=ONE_T).text
    assert f'id="time-days">{expected["time_days"]:,.2f} days<' in page
    assert f'id="total-flops">{expected["total_flops"]:.3e}<' in page
    assert f'id="measured-mfu">{100 * expected["measured"]["mfu"]:.1f}%<' in page


def test_megatron_equation_shown_with_the_numbers(client: TestClient) -> None:
    api = client.get("/api/calc/compute", params=ONE_T).json()
    m = api["megatron"]
    # eq. (3) with l = 128, h = 25600, V = 51200, s = 2048, B = 3072 (Table 1's 1T row).
    hand = 96 * 3072 * 2048 * 128 * 25600**2 * (1 + 2048 / (6 * 25600) + 51200 / (16 * 128 * 25600))
    assert m["flops_per_iteration"] == pytest.approx(hand)
    page = client.get("/calculators/compute/result", params=ONE_T).text
    assert r"96 \cdot 3072 \cdot 2048 \cdot 128 \cdot 25600^2" in page
    assert "arXiv:2104.04473" in page and "arXiv:2001.08361" in page


def test_achieved_flops_and_selective_recompute_on_page_api_and_cli(
    client: TestClient, capsys
) -> None:
    params = {**ONE_T, "mode": "training_selective", "attention_term": "true",
              "achieved_flops_per_gpu": "163e12"}  # fmt: skip
    api = client.get("/api/calc/compute", params=params).json()
    assert round(100 * api["achieved"]["utilization"]) == 52  # Narayanan et al., Table 1
    sel = api["megatron"]["selective"]
    # Korthikanti eq. (8) doubles the s/(6h) term; ShardLab adds one forward of the core.
    assert sel["paper_extra"] == pytest.approx(3 * sel["extra"], rel=0.02)
    page = client.get("/calculators/compute/result", params=params).text
    assert 'id="achieved-utilization">52.2%<' in page
    assert "Attention, causal count" in page and "eq. (8)" in page
    args = ["compute", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    bad = client.get("/api/calc/compute", params={**params, "attention_term": "false"})
    assert bad.status_code == 422 and "Selective recompute" in bad.text


def test_gpt3_default_reproduces_brown_table_d1(client: TestClient) -> None:
    api = client.get("/api/calc/compute").json()
    assert api["model"] == "GPT-3 175B"
    assert api["total_flops"] == pytest.approx(3.14e23, rel=0.005)
    assert "non-embedding" in api["params_basis"]


def test_published_anchor_links_reproduce_their_figures(client: TestClient) -> None:
    page = client.get("/calculators/compute").text
    links = re.findall(r'<a href="(/calculators/compute\?[^"]+)">', page)
    assert len(links) == 3
    days = []
    for link in links:
        query = link.split("?", 1)[1].replace("&amp;", "&")
        days.append(client.get(f"/api/calc/compute?{query}").json())
    assert days[0]["total_flops"] == pytest.approx(3.14e23, rel=0.005)
    assert round(days[1]["time_days"]) == 34
    assert round(days[2]["time_days"]) == 84


def test_fragment_shares_a_url_holding_every_input(client: TestClient) -> None:
    fragment = client.get("/calculators/compute/result", params=ONE_T)
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    for field in ComputeQuery.model_fields:
        assert f"{field}=" in url
    again = client.get(url.replace("/compute?", "/compute/result?"))
    assert again.text == fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"gpus": "0"}, "GPUs: must be at least 1"),
        ({"utilization": "1.5"}, "Utilization (HFU): must be at most 1"),
        ({"tokens": "lots"}, "Tokens D: must be a number"),
        ({"preset": "custom", "params": ""}, "A custom model needs Parameters N"),
        ({"gpu": "tpu-v5e", "dtype": "fp8"}, "no published fp8 peak"),
        ({"measured_tokens_per_s": "1e9"}, "more than the hardware can do"),
        ({"preset": "custom", "layers": "", "hidden": "", "attention_term": "true"},
         "The attention term needs"),
    ],
)  # fmt: skip
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get("/calculators/compute/result", params={**ONE_T, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    api = client.get("/api/calc/compute", params={**ONE_T, **params})
    assert api.status_code == 422


fields = st.sampled_from(sorted(ComputeQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 10**7).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["true", "false", "", "nan", "inf", "1e400", "custom", "fp8", "tpu-v5e",
                     "inference", "1e-300", "0.000001"]),
)  # fmt: skip


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in ("/api/calc/compute", "/calculators/compute/result"):
        response = client.get(path, params={**ONE_T, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])
