"""The decode step's roofline (app/calc/decode.py) against a hand derivation, and the bounds
it must keep."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.decode import decode_step, decode_step_s
from app.calc.hardware import ACCELERATORS
from app.calc.inference import InferenceSetup, inference_memory
from app.calc.model import PRESETS

H100 = ACCELERATORS["h100-sxm"]


def test_one_sequence_of_llama3_70b_on_eight_h100s_is_bound_by_memory() -> None:
    memory = inference_memory(InferenceSetup(PRESETS["llama3-70b"], tp=8, context=4096, batch=1))
    step = decode_step(memory, H100)
    # By hand: 70.55e9 bf16 weights over 8 GPUs = 17.64 GB; 80 layers x 1 KV head (8 over 8)
    # x 128 x 2 (K and V) x 4096 tokens x 2 bytes = 0.168 GB; at 3.35 TB/s that is 5.32 ms.
    weights = 70_553_706_496 * 2 / 8
    kv = 80 * 1 * 128 * 2 * 4096 * 2
    assert memory.term("weights").bytes_ == weights and memory.term("kv_cache").bytes_ == kv
    assert not step.compute_bound
    assert step.time_lower_s == pytest.approx((weights + kv) / 3.35e12)
    assert decode_step_s(memory, H100) == pytest.approx(5.315e-3, rel=1e-3)
    # The FLOPs: 2N plus attention over 4096 tokens, a tenth of a percent of the memory time.
    flops = (2 * 70_553_706_496 + 4 * 80 * 4096 * 64 * 128) / 8
    assert step.t_compute_s == pytest.approx(flops / 989.4e12)


def test_a_part_without_fp8_tensor_cores_runs_fp8_weights_at_its_bf16_rate() -> None:
    a100 = ACCELERATORS["a100-80gb-sxm"]
    assert "fp8" not in a100.peak_flops
    cfg = PRESETS["llama3-8b"]
    setup = InferenceSetup(cfg, weight_dtype="fp8", tp=1, context=128, batch=1024)
    memory = inference_memory(setup)
    step = decode_step(memory, a100)
    per_token = decode_step(memory, H100).t_compute_s
    # The same FLOPs on both parts; the A100 does them at its bf16 peak, the H100 at fp8.
    assert step.t_compute_s * a100.peak_flops["bf16"] == pytest.approx(
        per_token * H100.peak_flops["fp8"]
    )
    assert step.compute_bound  # 1024 short sequences at once: the FLOPs win


@given(batch=st.integers(1, 256), tp=st.sampled_from([1, 2, 4, 8]))
def test_a_bigger_batch_never_decodes_faster(batch: int, tp: int) -> None:
    def step(b: int) -> float:
        setup = InferenceSetup(PRESETS["llama3-8b"], tp=tp, context=2048, batch=b)
        return decode_step_s(inference_memory(setup), H100)

    assert step(batch + 1) >= step(batch) > 0
