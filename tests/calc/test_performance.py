"""The performance profile (app.calc.performance) and the kernel times built from it
(app.calc.planner.work), against hand derivations."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.model import PRESETS
from app.calc.performance import (
    PARAMETERS,
    Hardware,
    PerformanceProfile,
    gemm_seconds,
    hardware,
    load_profile,
    profile_from_dict,
)
from app.calc.planner.work import head_pass, layer_pass

H100 = hardware(PerformanceProfile(), 989.4e12, 0.801, 3.35e12)


def test_hardware_multiplies_the_ceilings_by_the_efficiencies() -> None:
    profile = PerformanceProfile(gemm_efficiency=0.9, hbm_efficiency=0.8,
                                 attention_efficiency=0.5)  # fmt: skip
    hw = hardware(profile, 989.4e12, 0.801, 3.35e12)
    assert hw.gemm_flops == pytest.approx(989.4e12 * 0.801 * 0.9)
    assert hw.attention_flops == pytest.approx(989.4e12 * 0.5)
    assert hw.hbm_bytes_per_s == pytest.approx(3.35e12 * 0.8)
    measured = hardware(
        PerformanceProfile(gemm_flops=700e12, hbm_bytes_per_s=3e12), 989.4e12, 0.801, 3.35e12
    )
    assert measured.gemm_flops == pytest.approx(700e12)  # gemm_efficiency 1 by default
    assert measured.hbm_bytes_per_s == pytest.approx(3e12 * 0.8)


def test_a_large_gemm_is_compute_bound_and_a_thin_one_memory_bound() -> None:
    hw = Hardware(gemm_flops=800e12, attention_flops=400e12, hbm_bytes_per_s=3e12, kernel_s=0)
    # 8192^3: 2 * 8192^3 = 1.1e12 FLOPs at 800e12 = 1.374 ms; 3 * 8192^2 * 2 B = 403 MB at
    # 3e12 = 0.134 ms: compute wins.
    assert gemm_seconds(8192, 8192, 8192, hw) == pytest.approx(2 * 8192**3 / 800e12)
    # 8192 x 256 x 256: 1.07e9 FLOPs = 1.34 us; bytes 2 (8192*256*2 + 256^2) = 8.52 MB =
    # 2.84 us: the bytes win (arithmetic intensity 126 < the ridge 267).
    moved = 2 * (8192 * 256 + 256 * 256 + 8192 * 256)
    assert gemm_seconds(8192, 256, 256, hw) == pytest.approx(moved / 3e12)


def test_a_layer_pass_by_hand() -> None:
    # Llama 3 8B, one sequence of 4096 tokens, tp 1, no SP, flash, no dropout.
    cfg = PRESETS["llama3-8b"]
    hw = Hardware(gemm_flops=800e12, attention_flops=400e12, hbm_bytes_per_s=3e12, kernel_s=5e-6)
    work = layer_pass(cfg, 4096, 1, 1, False, 1, 1, True, False, hw)
    t, h, f = 4096, 4096, 14336
    gemms = 2 * t * (h * (4096 + 2 * 1024) + 4096 * h + h * 2 * f + f * h)  # QKV, O, gate+up, down
    assert work.gemm_fwd_s == pytest.approx(gemms / 800e12)
    assert work.attention_fwd_s == pytest.approx(2 * t * 4096 * 4096 / 400e12)  # causal half
    assert work.attention_bwd_s == pytest.approx(2.5 * work.attention_fwd_s)
    # norms 2 x 2Th, residuals 2 x 3Th, rotary 2T(q + kv), SwiGLU 3Tf; 2 bytes each
    values = 4 * t * h + 6 * t * h + 2 * t * (4096 + 1024) + 3 * t * f
    assert work.memory_fwd_s == pytest.approx(2 * values / 3e12)
    assert work.memory_bwd_s == pytest.approx(2 * work.memory_fwd_s)
    assert work.kernels_fwd == 4 + 4 + 2 + 1 + 1  # GEMMs, norms+residuals, rotary, act, flash
    assert work.kernels_bwd == 2 * work.kernels_fwd
    assert work.full_s(hw) == pytest.approx(work.forward_s + work.kernels_fwd * 5e-6)
    # Ring attention over cp = 4 (Transformer Engine's AttnFuncWithCPAndKVP2P): an attention
    # kernel per ring step and two corrections after each, on a quarter of the tokens.
    ring = layer_pass(cfg, 4096, 1, 1, False, 4, 1, True, False, hw)
    assert ring.kernels_fwd == 4 + 4 + 2 + 1 + 3 * 4
    assert ring.attention_fwd_s == pytest.approx(work.attention_fwd_s / 4)


def test_the_loss_is_the_output_gemm_and_32_bytes_per_logit() -> None:
    cfg = PRESETS["llama3-8b"]
    hw = Hardware(gemm_flops=800e12, attention_flops=400e12, hbm_bytes_per_s=3e12, kernel_s=0)
    work = head_pass(cfg, 4096, 2, 2, True, 1, hw)
    tokens, logits = 8192, 8192 * 128256 / 2
    assert work.gemm_fwd_s == pytest.approx(2 * tokens * 4096 * 128256 / 2 / 800e12)
    norm = 2 * 2 * tokens * 4096 / 2
    assert work.memory_s == pytest.approx((3 * norm + 32 * logits) / 3e12)


def test_tensor_parallelism_splits_a_layers_work() -> None:
    cfg = PRESETS["llama3-70b"]
    one = layer_pass(cfg, 8192, 1, 1, False, 1, 1, True, False, H100)
    eight = layer_pass(cfg, 8192, 1, 8, True, 1, 1, True, False, H100)
    assert eight.gemm_fwd_s == pytest.approx(one.gemm_fwd_s / 8, rel=0.01)
    assert eight.attention_fwd_s == pytest.approx(one.attention_fwd_s / 8)


def test_a_profile_round_trips_through_json() -> None:
    profile = PerformanceProfile(name="mine", gemm_efficiency=0.9, gemm_flops=7e14)
    assert load_profile(profile.to_json()) == profile


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"gemm_efficiency": 1.5}, "gemm_efficiency = 1.5 is outside 0.3 to 1"),
        ({"kernel_overhead_s": -1}, "kernel_overhead_s = -1 is outside"),
        ({"speed": 3}, "unknown profile fields: speed"),
        ({"hbm_efficiency": "fast"}, "must be a number"),
        ({"gemm_flops": 0}, "gemm_flops must be positive"),
        ([1, 2], "a JSON object"),
    ],
)
def test_bad_profiles_say_what_is_wrong(data: object, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        profile_from_dict(data)  # type: ignore[arg-type]


def test_bad_json_is_named() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        load_profile("{gemm")
    with pytest.raises(ValueError, match="finite"):
        load_profile(json.dumps({"hbm_efficiency": math.nan}))


def test_every_default_lies_inside_its_bounds_and_is_cited() -> None:
    for p in PARAMETERS.values():
        assert p.low <= p.default <= p.high, p.name
        assert p.source and p.meaning and p.unit
    assert PerformanceProfile().values() == {n: p.default for n, p in PARAMETERS.items()}


@given(st.integers(1, 8), st.sampled_from([1, 2, 4, 8]))
def test_more_tokens_never_take_less_time(b: int, tp: int) -> None:
    cfg = PRESETS["llama3-8b"]
    small = layer_pass(cfg, 2048, b, tp, tp > 1, 1, 1, True, False, H100)
    large = layer_pass(cfg, 2048, b + 1, tp, tp > 1, 1, 1, True, False, H100)
    assert large.forward_s > small.forward_s
    assert large.compute_s > small.compute_s
