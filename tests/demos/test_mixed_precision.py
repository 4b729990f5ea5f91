"""The mixed-precision demo on a real 2-rank gloo worker, against app.calc.precision."""

from __future__ import annotations

import pytest

from app.calc.comm import Collective, ring_bytes_per_rank
from app.calc.float_formats import BF16, FP16, fraction_flushed_to_zero
from app.live.pages.mixed_precision import MixedPrecisionPrediction
from app.live.worker_process import LocalWorker
from demos.specs.mixed_precision import MixedPrecisionParams
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]
N = 4096
PARAMS = {"gradients": N, "loss_weight_exponent": 16, "spread_exponent": 14}


def _cases(events: list[dict]) -> dict[str, dict]:
    return {e["ranks"][0]["case"]: e for e in events if e["event"] == "measurement"}


@pytest.mark.demo
def test_fp16_loses_what_the_calculator_says_and_loss_scaling_keeps_it(
    demo_worker: WorkerInfo,
) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "mixed_precision", {**PARAMS, "loss_scale_exponent": 16})
    assert [e["event"] for e in events] == ["accepted"] + ["measurement"] * 5 + ["done"]
    cases = _cases(events)
    assert list(cases) == ["fp32", "fp16", "fp16 + loss scale", "bf16", "range"]
    assert all(e["correct"] for e in cases.values())

    # gradients span 2^-30 .. 2^-16; fp16 rounds |g| <= 2^-25 to zero: 5 of 14 octaves
    predicted = fraction_flushed_to_zero(-30, -16, FP16)
    assert predicted == pytest.approx(5 / 14)
    for row in cases["fp16"]["ranks"]:
        # n grid points sample the log-uniform spread: within one point of the share
        assert abs(row["zero_fraction"] - predicted) <= 1 / N
        assert row["step_skipped"] is False
    for case in ("fp32", "fp16 + loss scale", "bf16"):
        for row in cases[case]["ranks"]:
            assert row["zero_fraction"] == 0.0
            assert row["inf_fraction"] == 0.0
    for row in cases["fp16 + loss scale"]["ranks"]:
        assert row["max_relative_error"] <= FP16.unit_roundoff
        assert row["scale_after"] == 2.0**16
    for row in cases["bf16"]["ranks"]:
        assert row["max_relative_error"] <= BF16.unit_roundoff

    # the gradient all-reduce: 16-bit payload is half of fp32's, bytes exactly the ring's
    for case, element_bytes in (("fp32", 4), ("fp16", 2), ("bf16", 2)):
        for row in cases[case]["ranks"]:
            assert row["payload_bytes"] == N * element_bytes
            expected = ring_bytes_per_rank(Collective.ALL_REDUCE, N * element_bytes, 2)
            assert row["logical_bytes"] == expected


@pytest.mark.demo
def test_too_large_a_scale_overflows_and_the_step_is_skipped(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    params = {**PARAMS, "loss_scale_exponent": 32}
    events = run_job(address, token, "mixed_precision", params)
    prediction = MixedPrecisionPrediction(MixedPrecisionParams(**params), 2)
    assert prediction.of("fp16 + loss scale").inf_fraction == 1.0  # 2^(32-16) > 65504
    for row in _cases(events)["fp16 + loss scale"]["ranks"]:
        assert row["inf_fraction"] == 1.0
        assert row["step_skipped"] is True
        assert row["scale_after"] == 2.0**31  # GradScaler halves the scale after an overflow


@pytest.mark.demo
def test_casts_and_limits_equal_the_ieee_formulas(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "mixed_precision", {**PARAMS, "gradients": 16})
    prediction = MixedPrecisionPrediction(MixedPrecisionParams(**PARAMS), 2)
    measured = events[-1]["summary"]["range"]["formats"]
    for fmt in (FP16, BF16):
        got = measured[fmt.name]
        assert got["casts"] == prediction.range_prediction(fmt.name)
        assert got["max"] == fmt.max_finite
        assert got["smallest_normal"] == fmt.smallest_normal
        assert got["smallest_subnormal"] == fmt.smallest_subnormal
        assert got["eps"] == fmt.machine_epsilon
        assert 0.9 * fmt.unit_roundoff < got["max_relative_error"] <= fmt.unit_roundoff
    assert measured["fp16"]["casts"][:3] == ["65504.0", "65504.0", "inf"]
    assert measured["bf16"]["casts"][0] == "65536.0"
