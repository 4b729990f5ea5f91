"""The training-memory calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.training import training_memory
from app.calc.training_query import TrainingQuery

# The "done when" set-up: Llama-3 70B, 64 GPUs, TP 8, PP 2, ZeRO-1, selective, 8192.
SCENARIO = {"preset": "llama3-70b", "dp": 4, "tp": 8, "pp": 2, "zero_stage": 1,
            "recompute": "selective", "seq_len": 8192}  # fmt: skip


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = training_memory(TrainingQuery(**SCENARIO).setup())
    api = client.get("/api/calc/training-memory", params=SCENARIO).json()
    assert api["gpu_bytes"] == expected.gpu_bytes
    assert [t["key"] for t in api["terms"]] == [t.key for t in expected.terms]
    assert api["total_params"] == 70_553_706_496
    args = ["memory", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in SCENARIO.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/training-memory", params=SCENARIO).text
    total = f"{expected.gpu_bytes / 1e9:,.2f} GB"
    assert re.search(rf'id="gpu-total">{re.escape(total)}<', page)
    for term in expected.terms:
        assert f'data-term="{term.key}"' in page


def test_every_term_shows_formula_numbers_and_source(client: TestClient) -> None:
    api = client.get("/api/calc/training-memory", params=SCENARIO).json()
    for term in api["terms"]:
        assert term["formula"] and term["substituted"] and term["source"], term["key"]


def test_fragment_shares_a_url_holding_every_input(client: TestClient) -> None:
    fragment = client.get("/calculators/training-memory/result", params=SCENARIO)
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    model = TrainingQuery(**SCENARIO).model()
    for field in TrainingQuery.model_fields:
        # Empty means "derive it" (head_dim = h / a, out-projection bias as the others).
        if getattr(model, field, "given") is not None:
            assert f"{field}=" in url
    assert "layers=80" in url and "hidden=8192" in url
    # The shared URL reproduces the same result.
    again = client.get(url.replace("/training-memory?", "/training-memory/result?"))
    assert again.text == fragment.text


def test_gib_is_offered_and_labelled(client: TestClient) -> None:
    page = client.get("/calculators/training-memory", params={**SCENARIO, "unit": "GiB"}).text
    expected = training_memory(TrainingQuery(**SCENARIO).setup()).gpu_bytes / 2**30
    assert f"{expected:,.2f} GiB" in page and "2³⁰ bytes" in page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"tp": 3}, "Tensor parallel (TP) must divide the attention heads"),
        ({"pp": 100}, "cannot exceed the layers"),
        ({"offload_params": "true", "zero_stage": 1}, "Parameter offload needs ZeRO stage 3"),
        ({"dp": 0}, "Data parallel (DP): must be at least 1"),
        ({"seq_len": "long"}, "Sequence length: must be a whole number"),
        ({"preset": "custom", "layers": 4}, "a custom model needs"),
        ({"schedule": "interleaved", "virtual_stages": 1}, "virtual stages above 1"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get("/calculators/training-memory/result", params={**SCENARIO, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    api = client.get("/api/calc/training-memory", params={**SCENARIO, **params})
    assert api.status_code == 422


def test_hf_config_fills_the_model(client: TestClient) -> None:
    config = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
              "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
              "vocab_size": 32000, "hidden_act": "silu", "tie_word_embeddings": False}  # fmt: skip
    response = client.post("/api/calc/model/from-hf-config", json=config)
    assert response.status_code == 200
    assert response.json()["total_params"] == 6_738_415_616
    bad = client.post("/api/calc/model/from-hf-config", json={"model_type": "llama"})
    assert bad.status_code == 422 and "config.json" in bad.json()["detail"]


fields = st.sampled_from(sorted(TrainingQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 10**7).map(str),
    st.sampled_from(["true", "false", "", "nan", "inf", "1e400", "custom", "gpipe", "interleaved"]),
)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in ("/api/calc/training-memory", "/calculators/training-memory/result"):
        response = client.get(path, params={**SCENARIO, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])


def test_page_says_why_a_higher_zero_stage_needs_more(client: TestClient) -> None:
    # A deep ZeRO-3 prefetch on a small model over two ranks: the gathered layers cost more
    # than sharding the weights saves, so ZeRO-3's bar is above ZeRO-2's.
    params = {"preset": "gpt2-xl", "dp": 2, "tp": 1, "pp": 1, "zero_stage": 3,
              "zero3_prefetch_layers": 48, "seq_len": 1024,
              "sequence_parallel": "false"}  # fmt: skip
    page = client.get("/calculators/training-memory/result", params=params).text
    assert "ZeRO-3 needs more than ZeRO-2 here" in page
    plain = client.get("/calculators/training-memory/result", params=SCENARIO).text
    assert "needs more than" not in plain
