"""The tensor-parallel demo on a real 2-rank gloo worker: comm per pass equals app.calc's."""

from __future__ import annotations

import pytest

from app.calc.tensor_parallel import TPLayout, tp_block_collectives
from app.live.worker_process import LocalWorker
from demos.specs.tensor_parallel import TensorParallelParams
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]
PARAMS = {"hidden": 64, "ffn_multiple": 4, "batch": 2, "seq_len": 8, "heads": 4, "iterations": 2}


def predicted_by_kind(layout: str, pass_: str, tp: int) -> list[dict]:
    p = TensorParallelParams(**PARAMS)
    calls = tp_block_collectives(TPLayout(layout), p.tokens, p.hidden, p.ffn_hidden, 4)
    return [
        {
            "kind": c.kind.value,
            "count": 1,
            "payload_bytes": c.payload_bytes,
            "logical_bytes": c.bytes_per_rank(tp),
        }
        for c in calls
        if c.pass_ == pass_
    ]


@pytest.mark.demo
def test_every_split_issues_exactly_the_predicted_collectives_and_matches_one_rank(
    demo_worker: WorkerInfo,
) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "tensor_parallel", {**PARAMS, "layout": "all"})

    assert [e["event"] for e in events] == ["accepted"] + ["measurement"] * 6 + ["done"]
    layouts = [e["ranks"][0]["layout"] for e in events[1:-1]]
    assert layouts == ["mlp_column_row"] * 2 + ["mlp_row_column"] * 2 + ["attention_heads"] * 2
    for event in events[1:-1]:
        assert event["correct"] is True
        for row in event["ranks"]:
            assert row["max_abs_error"] < 1e-5
            for pass_ in ("forward", "backward"):
                assert row[pass_]["collectives"] == predicted_by_kind(row["layout"], pass_, 2)
                # gloo's ring all-reduce and all-gather: the ring bytes plus small headers.
                logical = row[pass_]["logical_bytes"]
                assert logical <= row[pass_]["wire_bytes"] <= logical + 1024

    # 16 tokens x 64 hidden x 4 B = 4,096 B; the row-then-column MLP all-reduces the 4x wider
    # activation and gathers the output: (16,384 + 4,096 / 2) B per rank per pass at N = 2.
    by_layout = {item["layout"]: item for item in events[-1]["summary"]["layouts"]}
    assert by_layout["mlp_column_row"]["passes"]["forward"]["logical_bytes_per_rank"] == 4_096
    assert by_layout["mlp_row_column"]["passes"]["backward"]["logical_bytes_per_rank"] == 18_432
    assert by_layout["attention_heads"]["passes"]["backward"]["logical_bytes_per_rank"] == 4_096
    assert all(item["correct"] for item in by_layout.values())
    assert all(
        item["passes"][p]["same_on_every_rank_and_step"]
        for item in by_layout.values()
        for p in ("forward", "backward")
    )


@pytest.mark.demo
def test_heads_that_do_not_split_over_the_ranks_fail_with_a_clear_message(
    demo_worker: WorkerInfo,
) -> None:
    _, address, token = demo_worker
    params = {**PARAMS, "heads": 1, "layout": "attention_heads"}
    events = run_job(address, token, "tensor_parallel", params)

    assert events[-1]["event"] == "error"
    assert "1 heads cannot be split over the worker's 2 ranks" in events[-1]["message"]


def test_shapes_that_cannot_be_a_block_are_refused() -> None:
    with pytest.raises(ValueError, match="heads \\(3\\) must divide hidden \\(64\\)"):
        TensorParallelParams(hidden=64, heads=3)
    with pytest.raises(ValueError, match="at most 1024 tokens"):
        TensorParallelParams(batch=16, seq_len=128)
    assert TensorParallelParams(hidden=66, heads=2).problem_with(4) == (
        "hidden size 66 is not divisible by the worker's 4 ranks"
    )
