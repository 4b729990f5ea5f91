"""FLOPs per token, Megatron's per-iteration count, time and MFU, against published figures."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.compute_query import ComputeQuery, compute_result
from app.calc.flops import (
    SECONDS_PER_DAY,
    attention_flops_per_token,
    estimate,
    flops_per_token,
    forward_flops_per_token,
    korthikanti_selective_flops_per_iteration,
    megatron_flops_per_iteration,
    training_time_s,
    utilization_from_throughput,
)
from app.calc.model import PRESETS, count_params

A100_BF16 = 312e12


def test_per_token_multipliers() -> None:
    n = 7e9
    assert flops_per_token(n, "inference") == 2 * n
    assert flops_per_token(n, "training") == 6 * n
    assert flops_per_token(n, "training_recompute") == 8 * n


def test_attention_term_by_hand_full_count_and_kaplans_causal_half() -> None:
    # ShardLab counts Q K^T and A V in full: 4 n_layer n_ctx d_attn per forward. GPT-3: 96
    # layers, n_ctx 2048, d_attn 12288 -> 4 * 96 * 2048 * 12288 = 9.663676416e9. Kaplan et al.
    # 2020, Table 1 writes half of it, 2 n_layer n_ctx d_attn = 4.831838208e9: the causal count.
    assert forward_flops_per_token(1e9, 96, 2048, 12288) == 2e9 + 9_663_676_416
    assert flops_per_token(1e9, "training", 96, 2048, 12288) == 3 * (2e9 + 9_663_676_416)
    assert attention_flops_per_token(96, 2048, 12288, causal=True) == 4_831_838_208


def test_selective_recompute_adds_one_forward_of_attention_and_the_paper_counts_three() -> None:
    # Selective: the 3 passes of training + attention's core once more (4 s h per layer).
    attention = attention_flops_per_token(96, 2048, 12288)
    assert flops_per_token(1e9, "training_selective", 96, 2048, 12288) == (
        3 * (2e9 + attention) + attention
    )
    # Korthikanti et al. 2022, Section 5: selective recompute costs GPT-3 2.7% more FLOPs,
    # which is eq. (8)'s s/(3h) against eq. (7)'s s/(6h): s/(6h) over the model count.
    model = megatron_flops_per_iteration(1, 2048, 96, 12288, 50257, recompute=False)
    paper = korthikanti_selective_flops_per_iteration(1, 2048, 96, 12288, 50257)
    assert round(100 * (paper / model - 1), 1) == 2.7
    # ShardLab's one forward of the core: 4 B s^2 h per layer, a third of the paper's extra.
    ours = 96 * 4 * 2048**2 * 12288
    assert paper - model == pytest.approx(3 * ours)


def test_gpt3_training_compute_matches_brown_table_d1() -> None:
    # Brown et al. 2020, Table D.1: GPT-3 175B, 300B tokens, 3.14E+23 FLOPs.
    assert 6 * 175e9 * 300e9 == pytest.approx(3.15e23)
    assert 6 * 175e9 * 300e9 == pytest.approx(3.14e23, rel=0.02)
    # The calculator's N is the preset's non-embedding count (Kaplan's convention):
    # total 174.6B less 50257 x 12288 token and 2048 x 12288 position embeddings.
    counts = count_params(PRESETS["gpt3-175b"])
    assert counts.total == pytest.approx(174.6e9, rel=1e-3)
    result = compute_result(ComputeQuery(preset="gpt3-175b", tokens=300e9))
    assert result["params"] == counts.total - 50257 * 12288 - 2048 * 12288
    assert result["total_flops"] == pytest.approx(3.14e23, rel=0.005)


def test_megatron_equation_3_small_case_by_hand() -> None:
    # B=2, s=4, l=3, h=8, V=16:
    # 96 * 2 * 4 * 3 * 64 = 147456; 1 + 4/48 + 16/(16*3*8) = 1 + 1/12 + 1/24 = 1.125
    assert megatron_flops_per_iteration(2, 4, 3, 8, 16) == pytest.approx(147456 * 1.125)
    # Without recompute: 72 * 2*4*3*64 = 110592; 1 + 1/12 + 16/(12*3*8) = 1 + 1/12 + 1/18
    assert megatron_flops_per_iteration(2, 4, 3, 8, 16, recompute=False) == pytest.approx(
        110592 * (1 + 1 / 12 + 1 / 18)
    )


def test_megatron_equation_3_from_its_gemm_counts() -> None:
    # Per layer and forward: 24Bsh^2 + 4Bs^2h; logit layer 2BshV. With recompute, the layers
    # run 4 passes and the logit layer 3; without, both run 3.
    b, s, l, h, v = 8, 2048, 24, 2304, 51200  # noqa: E741  (Table 1's 1.7B model shape)
    layer = 24 * b * s * h**2 + 4 * b * s**2 * h
    logit = 2 * b * s * h * v
    assert megatron_flops_per_iteration(b, s, l, h, v) == pytest.approx(4 * l * layer + 3 * logit)
    assert megatron_flops_per_iteration(b, s, l, h, v, recompute=False) == pytest.approx(
        3 * l * layer + 3 * logit
    )


def test_megatron_gpt3_34_days_and_1t_84_days() -> None:
    # Narayanan et al. 2021, §5.1, eq. (4): time ≈ 8TP / (nX).
    gpt3 = training_time_s(8 * 300e9 * 175e9, 1024, A100_BF16, 140e12 / A100_BF16)
    assert round(gpt3 / SECONDS_PER_DAY) == 34
    # 1T model: Table 1 gives P = 1008.0B; 450B tokens, 3072 GPUs, 163 TFLOP/s.
    one_t = estimate(1008e9, 450e9, "training_recompute", 3072, A100_BF16, 163 / 312)
    assert one_t.time_s / SECONDS_PER_DAY == pytest.approx(84, abs=0.5)
    assert round(one_t.time_s / SECONDS_PER_DAY) == 84


def test_gpu_hours_and_cost_by_hand() -> None:
    # 6 * 1e9 * 1e12 = 6e21 FLOPs on 8 GPUs of 1e15 at 50%: 6e21 / 4e15 = 1.5e6 s.
    est = estimate(1e9, 1e12, "training", 8, 1e15, 0.5, price_per_gpu_hour=2.5)
    assert est.time_s == pytest.approx(1.5e6)
    assert est.gpu_hours == pytest.approx(8 * 1.5e6 / 3600)
    assert est.cost == pytest.approx(est.gpu_hours * 2.5)


def test_recompute_costs_more_hardware_flops_not_more_model_flops() -> None:
    plain = estimate(1e9, 1e12, "training", 8, 1e15, 0.5)
    recompute = estimate(1e9, 1e12, "training_recompute", 8, 1e15, 0.5)
    assert recompute.model_flops == plain.model_flops
    assert recompute.hardware_flops == pytest.approx(plain.hardware_flops * 8 / 6)
    assert recompute.mfu == pytest.approx(0.5 * 6 / 8)


@given(
    params=st.floats(1e6, 1e13),
    tokens=st.floats(1e6, 1e14),
    gpus=st.integers(1, 100_000),
    utilization=st.floats(0.01, 1.0),
    mode=st.sampled_from(["training", "training_recompute", "inference"]),
)
def test_mfu_round_trip(
    params: float, tokens: float, gpus: int, utilization: float, mode: str
) -> None:
    # Time from a utilization, the tokens/s that time implies, and back to the utilization.
    est = estimate(params, tokens, mode, gpus, 989.4e12, utilization)
    tokens_per_s = tokens / est.time_s
    hfu = utilization_from_throughput(tokens_per_s, est.hardware_flops_per_token, gpus, 989.4e12)
    mfu = utilization_from_throughput(tokens_per_s, est.model_flops_per_token, gpus, 989.4e12)
    assert hfu == pytest.approx(utilization, rel=1e-9)
    assert mfu == pytest.approx(est.mfu, rel=1e-9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: flops_per_token(0, "training"), "must be positive"),
        (lambda: flops_per_token(1e9, "guess"), "unknown mode"),
        (lambda: training_time_s(1e20, 0, 1e15, 0.5), "at least 1"),
        (lambda: training_time_s(1e20, 8, 1e15, 1.5), "utilization"),
        (lambda: megatron_flops_per_iteration(0, 1, 1, 1, 1), "batch"),
    ],
)
def test_impossible_inputs_raise(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_achieved_flops_per_gpu_gives_utilization_and_aggregate() -> None:
    # Narayanan et al. 2021, arXiv:2104.04473, abstract and Table 1: the 1T model reaches
    # 163 TFLOP/s per GPU on 3072 A100s, 52% of the 312 TFLOP/s peak, 502 PFLOP/s in all
    # (163 is rounded: 502e15 / 3072 = 163.4e12).
    r = compute_result(
        ComputeQuery(
            preset="custom",
            params=1008e9,
            tokens=450e9,
            gpus=3072,
            gpu="a100-80gb-sxm",
            achieved_flops_per_gpu=163e12,
        )  # fmt: skip
    )
    achieved = r["achieved"]
    assert round(100 * achieved["utilization"]) == 52
    assert achieved["aggregate_flops"] == pytest.approx(502e15, rel=0.005)
    # The same FLOPs at that aggregate: executed FLOPs / (n X).
    assert achieved["time_s"] == pytest.approx(r["total_flops"] / (3072 * 163e12))


def test_achieved_above_peak_is_refused() -> None:
    with pytest.raises(ValueError, match="more than"):
        ComputeQuery(preset="custom", params=1e9, gpu="a100-80gb-sxm",
                     achieved_flops_per_gpu=400e12)  # fmt: skip
