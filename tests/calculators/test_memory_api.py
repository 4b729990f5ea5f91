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
    assert {p["name"] for p in operation["parameters"]} == {
        "params", "dp_degree", "recipe", "optimizer", "device_gb", "reserve_gb",
        "gpus_per_node", "largest_layer_params",
    }  # fmt: skip
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
    assert fragment.headers["HX-Replace-Url"] == (
        "/calculators/memory?params_b=70&dp_degree=8&recipe=mixed_bf16&optimizer=adam"
        "&device_gb=80&reserve_gb=0&gpus_per_node=8&largest_layer_m=131.072"
    )


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


def test_api_answers_the_largest_model_by_hand(client: TestClient) -> None:
    # 80 GB, N_d = 64, mixed-precision Adam: ZeRO-3 holds 80e9 * 64 / 16 = 320e9 parameters;
    # with a 16 GB reserve, 64e9 * 64 / 16 = 256e9.
    body = client.get("/api/calc/memory", params={"params": 7.5e9, "dp_degree": 64}).json()
    assert body["largest_model"][3] == {
        "zero_stage": 3, "bytes_per_param_per_gpu": 0.25, "params": 320e9
    }  # fmt: skip
    reserved = client.get(
        "/api/calc/memory", params={"params": 7.5e9, "dp_degree": 64, "reserve_gb": 16}
    ).json()
    assert reserved["largest_model"][3]["params"] == 256e9
    # pure bf16 + Adam, 2 + 2 + 8 = 12 B, ZeRO-0: 80e9 / 12.
    bf16 = client.get(
        "/api/calc/memory", params={"params": 7.5e9, "dp_degree": 64, "recipe": "bf16"}
    ).json()
    assert bf16["bytes_per_param"] == {"weights": 2, "grads": 2, "optimizer": 8}
    assert bf16["largest_model"][0]["params"] == 80e9 / 12


def test_api_and_page_show_deepspeeds_docs_table(client: TestClient) -> None:
    # DeepSpeed's docs/code-docs/source/memory.rst: t5-3b (2851M, largest layer 32M) on one
    # node of 8 GPUs, estimate_zero3_model_states_mem_needs_all_cold.
    params = {"params": 2851e6, "dp_degree": 8, "largest_layer_params": 32e6}
    body = client.get("/api/calc/memory", params=params).json()
    assert [r["printed"] for r in body["deepspeed"]["zero3"]][::2] == [
        "   71.69GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1",
        "   63.72GB |   0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=1",
        "    1.43GB |   6.09GB | offload_param=none, offload_optimizer=none, zero_init=1",
    ]
    assert body["deepspeed"]["nodes"] == 1 and body["deepspeed"]["buffer_factor"] == 1.5
    page = client.get(
        "/calculators/memory",
        params={"params_b": 2.851, "dp_degree": 8, "largest_layer_m": 32},
    ).text
    assert 'id="deepspeed-table"' in page and '<td class="num">71.69</td>' in page
    assert "stage3.py:3744" in page and "18 bytes per parameter" in page
    assert 'id="largest-model-table"' in page and 'id="precision-table"' in page


def test_page_refuses_a_node_size_that_does_not_divide(client: TestClient) -> None:
    fragment = client.get(
        "/calculators/memory/result", params={"params_b": 7, "dp_degree": 12, "gpus_per_node": 8}
    )
    assert fragment.status_code == 422
    assert "GPUs per node (8) must divide the data-parallel degree (12)" in fragment.text


def test_cli_largest_model_and_deepspeed(capsys) -> None:
    from app.calc.__main__ import main as cli

    assert cli(["memory", "--device-gb", "80", "--dp-degree", "64", "--stage", "3"]) == 0
    assert "0.25         3.2e+11" in capsys.readouterr().out
    assert cli(["memory", "--params", "2851e6", "--dp-degree", "8", "--deepspeed",
                "--largest-layer-params", "32e6"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "ZeRO-3    1.43GB |   6.09GB | offload_param=none, offload_optimizer=none" in out


def test_page_precision_section_with_an_fp8_recipe(client: TestClient) -> None:
    page = client.get(
        "/calculators/memory", params={"params_b": 7.5, "dp_degree": 64, "recipe": "fp8_te"}
    ).text
    # 2 B bf16 + 2 B FP8 copies + 2 B grads + 4 B master + 8 B Adam = 18 B per parameter.
    assert 'data-term="fp8-copies"' in page and 'id="bytes-per-param">18<' in page
    assert "an FP8 transpose on Hopper (1 B, linear.py:467)" in page
    # ZeRO-3 on 64 ranks: 18 * 7.5e9 / 64 = 2.109375e9 B.
    assert "2.11 GB" in page
    assert '<tr data-gpu="h100-sxm">' in page and "1,978.9 TFLOP/s" in page
    body = client.get(
        "/api/calc/memory", params={"params": 7.5e9, "dp_degree": 64, "recipe": "fp8_te"}
    ).json()
    assert body["bytes_per_param"] == {"weights": 4, "grads": 2, "optimizer": 12}
    assert body["stages"][3]["total_bytes"] == 18 * 7.5e9 / 64
