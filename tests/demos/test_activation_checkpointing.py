"""The activation-checkpointing demo on a real 2-rank gloo worker: saved bytes and the
backward peak, to the byte."""

from __future__ import annotations

import pytest

from app.calc.activations import mlp_stack_saved_bytes
from app.calc.checkpointing import mlp_stack_backward_peak
from app.live.worker_process import LocalWorker
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]
PARAMS = {"layers": 4, "width": 32, "tokens": 64, "segment_layers": 2, "steps": 2}
MODES = [("none", None), ("every layer", 1), ("every 2 layers", 2)]


@pytest.mark.demo
def test_saved_bytes_equal_the_calculator_and_gradients_match(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "activation_checkpointing", PARAMS)

    assert [e["event"] for e in events] == ["accepted"] + ["measurement"] * 6 + ["done"]
    measured = events[1:-1]
    assert [e["ranks"][0]["mode"] for e in measured] == [m for m, _ in MODES] * 2
    for event in measured:
        assert event["correct"] is True  # gradients bit-equal to the run without recompute
        for row in event["ranks"]:
            expected = mlp_stack_saved_bytes(4, 64, 32, 128, 4, row["segment_layers"])
            assert row["saved_bytes"] == expected
            peak = mlp_stack_backward_peak(4, 64, 32, 128, 4, row["segment_layers"])
            assert (row["peak_bytes"], row["peak_segment"]) == (peak.total, peak.segment)
            assert row["allocator_peak_bytes"] is None  # CPU: no allocator statistics
    # by hand: 4 * 64 * (32 + 2*128) * 4; 4 block inputs; 2 segment inputs of 64*32*4 B
    summary = events[-1]["summary"]
    assert [(m["mode"], m["saved_bytes"]) for m in summary["modes"]] == [
        ("none", 294_912),
        ("every layer", 32_768),
        ("every 2 layers", 16_384),
    ]
    assert all(m["same_on_every_rank"] and m["gradients_equal"] for m in summary["modes"])
    # by hand, u = 64*32*4 = 8,192 (a block input), v = 4u (a GeLU tensor), s = u + 2v; the
    # gradients u + v and the loss with its seed 8 B are in every peak. None: 4s, in block 4.
    # Every layer: 4 block inputs + block 4 rebuilt (s - u). Every 2: 2 inputs + blocks 3-4
    # rebuilt (2s - u), in segment 2.
    assert [(m["peak_bytes"], m["peak_segment"]) for m in summary["modes"]] == [
        (294_912 + 40_960 + 8, 4),
        (32_768 + 65_536 + 40_960 + 8, 4),
        (16_384 + 139_264 + 40_960 + 8, 2),
    ]
    assert all(m["peak_same_on_every_rank"] for m in summary["modes"])
    assert summary["modes"][0]["time_vs_none"] == 1.0


def test_a_segment_longer_than_the_stack_is_refused() -> None:
    from pydantic import ValidationError

    from demos.specs.activation_checkpointing import PARAMS as Params

    with pytest.raises(ValidationError, match="a segment of 5 blocks is longer than the 4-block"):
        Params(layers=4, segment_layers=5)
