"""The inference-memory calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.inference import inference_memory
from app.calc.inference_query import InferenceQuery

SCENARIO = {"preset": "llama2-70b", "tp": 4, "context": 4096, "batch": 16, "gpu": "h100-80gb"}
API = "/api/calc/inference-memory"
FRAGMENT = "/calculators/inference-memory/result"


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = inference_memory(InferenceQuery(**SCENARIO).setup())
    api = client.get(API, params=SCENARIO).json()
    assert api["total_bytes"] == expected.total_bytes
    assert api["kv_bytes_per_token_model"] == 327_680
    assert api["kv_bytes_per_token_gpu"] == 81_920
    assert api["largest_batch"] == 123 and api["largest_context"] == 31_647
    args = ["inference", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in SCENARIO.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/inference-memory", params=SCENARIO).text
    assert f'id="gpu-total">{expected.total_bytes / 1e9:,.2f} GB<' in page
    assert 'id="largest-batch">123<' in page and 'id="largest-context">31,647<' in page
    assert 'id="kv-token-model">327,680 B<' in page
    for term in expected.terms:
        assert f'data-term="{term.key}"' in page


def test_cli_table(capsys) -> None:
    assert cli(["inference", "--preset", "llama2-70b", "--tp", "16"]) == 0
    out = capsys.readouterr().out
    assert "327,680 B for the model, 40,960 B per GPU" in out and "replicated" in out


def test_replicated_kv_heads_are_explained(client: TestClient) -> None:
    page = client.get(FRAGMENT, params={**SCENARIO, "tp": 16}).text
    assert "fewer KV heads (8) than GPUs (16)" in page
    assert "2× the" in page


def test_fragment_shares_a_url_holding_every_input(client: TestClient) -> None:
    fragment = client.get(FRAGMENT, params=SCENARIO)
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    # Empty means h / a, MLA's defaults, the exact count, the shape's KV size.
    optional = {"head_dim", "kv_lora_rank", "qk_rope_head_dim", "params", "kv_bytes_per_token"}
    for field in InferenceQuery.model_fields:
        if field not in optional:
            assert f"{field}=" in url
    assert "layers=80" in url and "kv_heads=8" in url
    again = client.get(url.replace("/inference-memory?", "/inference-memory/result?"))
    assert again.text == fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"tp": 3}, "Tensor parallel (3) must divide the 64 attention heads"),
        ({"tp": 0}, "Tensor parallel t: must be at least 1"),
        ({"batch": "many"}, "Batch b (sequences): must be a whole number"),
        ({"utilisation": 1.5}, "GPU memory utilisation u: must be at most 1"),
        ({"preset": "custom", "layers": 4}, "A custom model needs"),
        ({"kv_heads": 7}, "Heads (64) must be a multiple of kv_heads (7)"),
        ({"weight_dtype": "int3"}, "Weights dtype"),
        ({"attention": "mla", "tp": 3}, "Tensor parallel (3) must divide the 64 attention heads"),
        ({"attention": "sparse"}, "Attention"),
        ({"params": 0}, "Nominal parameters: must be at least 1"),
        ({"kv_lora_rank": 0}, "Latent d_c (kv_lora_rank): must be at least 1"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get(FRAGMENT, params={**SCENARIO, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    assert client.get(API, params={**SCENARIO, **params}).status_code == 422


fields = st.sampled_from(sorted(InferenceQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 10**7).map(str),
    st.sampled_from(["true", "", "nan", "inf", "1e400", "0.5", "custom", "int4", "fp8", "GiB"]),
)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in (API, FRAGMENT):
        response = client.get(path, params={**SCENARIO, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])


# DeepSeek-V3 (config.json: 61 layers, hidden 7168, 128 heads of 128, kv_lora_rank 512,
# qk_rope_head_dim 64) at its nominal 671B in fp8 on eight H200s with TP 8.
DEEPSEEK_V3 = {
    "preset": "custom", "layers": 61, "hidden": 7168, "heads": 128, "kv_heads": 128,
    "head_dim": 128, "ffn_hidden": 18432, "vocab": 129280, "params": 671e9, "attention": "mla",
    "weight_dtype": "fp8", "tp": 8, "context": 4096, "batch": 16, "gpu": "h200",
}  # fmt: skip


def test_mla_on_api_cli_and_page(client: TestClient, capsys) -> None:
    api = client.get(API, params=DEEPSEEK_V3).json()
    # (512 + 64) x 61 x 2 B = 70,272 B per token, the same on every one of the 8 GPUs.
    assert api["kv_bytes_per_token_model"] == api["kv_bytes_per_token_gpu"] == 70_272
    assert api["kv_replicated"] and api["attention"] == "mla" and api["nominal_params"]
    assert api["kv_lora_rank"] == 512 and api["qk_rope_head_dim"] == 64
    assert api["weights_bytes"] == 83.875e9
    assert api["tokens_that_fit"] == 722_967 and api["largest_batch"] == 176
    args = ["inference", "--json"] + [
        f"--{k.replace('_', '-')}={v}" for k, v in DEEPSEEK_V3.items()
    ]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/inference-memory", params=DEEPSEEK_V3).text
    assert 'id="kv-token-model">70,272 B<' in page and 'id="kv-token-gpu">70,272 B<' in page
    assert "no head axis to split" in page and "35,136 elements" in page
    assert 'id="tokens-that-fit">722,967<' in page
    assert 'name="attention"' in page and 'value="mla" selected' in page


def test_mla_defaults_fill_in(client: TestClient) -> None:
    given = dict(DEEPSEEK_V3)
    explicit = client.get(API, params={**given, "kv_lora_rank": 512, "qk_rope_head_dim": 64})
    assert client.get(API, params=given).json() == explicit.json()


def test_nominal_params_cli_table(capsys) -> None:
    # 70e9 x 1 B / 2 = 35 GB of weights per GPU; 0.9 x 81,559 MiB - 35 GB - 1 GB = 40.97 GB left.
    args = ["inference", "--params", "70e9", "--weight-dtype", "fp8", "--tp", "2",
            "--kv-bytes-per-token", "327680"]  # fmt: skip
    assert cli(args) == 0
    out = capsys.readouterr().out
    assert "70,000,000,000 parameters (nominal)" in out
    assert "Weights (fp8)                        35.00" in out
    assert "left for the KV cache per GPU: 40.97 GB, 250,053 tokens" in out
