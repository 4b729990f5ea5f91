"""DDP vs ZeRO-1/2/3, run for real on the 2-rank gloo worker: every byte against app.calc."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from app.calc.comm import Collective, ring_bytes_per_rank
from app.live.pages.zero_stages import STRATEGIES, ZeroPrediction
from app.live.worker_process import LocalWorker
from demos.specs.zero_stages import ZeroStagesParams
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]

# A vocabulary of 101 rows does not split over 2 ranks: FSDP2 pads both embedding tables.
PARAMS = {"width": 32, "layers": 2, "vocab": 101, "seq_len": 16, "batch": 2, "steps": 3}
WORLD_SIZE = 2


@pytest.fixture(scope="module")
def events(demo_worker: WorkerInfo) -> list[dict[str, Any]]:
    _, address, token = demo_worker
    return run_job(address, token, "zero_stages", PARAMS)


@pytest.fixture(scope="module")
def prediction() -> ZeroPrediction:
    return ZeroPrediction(ZeroStagesParams(**PARAMS), WORLD_SIZE)


def _steps(events: list[dict[str, Any]], strategy: str) -> list[dict[str, Any]]:
    return [
        e for e in events if e["event"] == "measurement" and e["ranks"][0]["strategy"] == strategy
    ]


@pytest.mark.demo
def test_four_strategies_run_and_their_losses_coincide(events: list[dict[str, Any]]) -> None:
    kinds = [event["event"] for event in events]
    assert kinds == ["accepted"] + ["measurement"] * 12 + ["done"]
    assert all(event["correct"] for event in events[1:-1])
    losses = events[-1]["summary"]["strategies"]
    ddp = losses["ddp"]["losses"]
    assert len(ddp) == 3
    for strategy in STRATEGIES:
        assert losses[strategy]["losses"] == pytest.approx(ddp, rel=1e-5)


@pytest.mark.demo
def test_model_state_bytes_equal_torchs_layout_on_every_rank(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    summary = events[-1]["summary"]["strategies"]
    for strategy in STRATEGIES:
        for rank in range(WORLD_SIZE):
            assert summary[strategy]["memory"][rank] == prediction.memory(strategy, rank)
    # By hand: 32,448 parameters in 29 tensors, 4 B each; Adam m + v + a 4 B step per tensor.
    assert prediction.param_count == 32_448 and prediction.tensor_count == 29
    assert summary["ddp"]["memory"][0]["optimizer"] == 8 * 32_448 + 4 * 29
    # FSDP2: 101 rows -> 51 per rank, one padded row of 32 in each embedding table.
    assert summary["zero3"]["memory"][0]["params"] == 4 * (32_448 + 2 * 32) // 2
    assert summary["zero2"]["memory"][0]["params_after_forward"] == 4 * (32_448 + 2 * 32)


@pytest.mark.demo
def test_measured_memory_differs_from_the_paper_only_by_step_counters_and_padding(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    summary = events[-1]["summary"]["strategies"]
    ddp = prediction.paper("ddp")
    assert summary["ddp"]["memory"][0]["params"] == ddp.weights_bytes
    assert summary["ddp"]["memory"][0]["optimizer"] - ddp.optimizer_bytes == 4 * 29
    zero1 = summary["zero1"]["memory"]
    # Whole tensors per rank: the two shards differ, but together hold all of Adam's state.
    assert sum(m["optimizer"] for m in zero1) == 8 * 32_448 + 4 * 29
    zero3 = prediction.paper("zero3")
    padding = 4 * 2 * 32  # bytes of padding over both ranks
    assert summary["zero3"]["memory"][0]["params"] - zero3.weights_bytes == padding / 2


@pytest.mark.demo
def test_every_steady_counted_step_counts_the_same_bytes_on_every_rank(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    for strategy in STRATEGIES:
        # Row 0's counted step is DDP's second, which rebuilds its buckets; the rest are steady.
        steady = [row for event in _steps(events, strategy)[1:] for row in event["ranks"]]
        assert len(steady) == 2 * WORLD_SIZE
        issued = [{phase: data["collectives"] for phase, data in row["phases"].items()}
                  for row in steady]  # fmt: skip
        assert all(calls == issued[0] for calls in issued), strategy
        for row in steady:
            assert row["logical_bytes"] == prediction.logical_bytes(strategy)
            assert row["time_s"] > 0  # from the clean step before it, which no probe watched


@pytest.mark.demo
def test_collectives_of_the_last_step_equal_the_prediction(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    summary = events[-1]["summary"]["strategies"]
    for strategy in STRATEGIES:
        measured = [
            (phase, c["kind"], c["payload_bytes"], c["logical_bytes"])
            for phase, data in summary[strategy]["phases"].items()
            for c in data["collectives"]
        ]
        predicted = [
            (c.phase, c.kind, c.payload_bytes, c.logical_bytes)
            for c in prediction.collectives(strategy)
        ]
        assert measured == predicted, strategy
        counts = {
            (phase, c["kind"]): c["count"]
            for phase, data in summary[strategy]["phases"].items()
            for c in data["collectives"]
        }
        for call in prediction.collectives(strategy):
            if call.count is not None:
                assert counts[(call.phase, call.kind)] == call.count
        assert summary[strategy]["logical_bytes"] == prediction.logical_bytes(strategy)


@pytest.mark.demo
def test_each_gap_to_the_paper_has_its_documented_reason(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    summary = events[-1]["summary"]["strategies"]
    full = 4 * 32_448
    # DDP is the paper's 2(N-1)/N * 4 Psi exactly.
    assert summary["ddp"]["logical_bytes"] == prediction.paper_logical_bytes("ddp")
    # torch's ZeRO-1 broadcasts every parameter on top of DDP's all-reduce: + 4 Psi.
    assert summary["zero1"]["logical_bytes"] - summary["ddp"]["logical_bytes"] == full
    assert summary["zero1"]["phases"]["step"]["collectives"][0]["count"] == 29
    # FSDP2 sends its padding: (N-1)/N of the padded bytes, in each of 2 or 3 passes.
    padding = prediction.padding_bytes
    assert padding == 4 * 2 * 32
    for strategy, passes in (("zero2", 2), ("zero3", 3)):
        gap = summary[strategy]["logical_bytes"] - prediction.paper_logical_bytes(strategy)
        assert gap == passes * ring_bytes_per_rank(Collective.ALL_GATHER, padding, WORLD_SIZE)


@pytest.mark.demo
def test_gloo_reduce_scatter_writes_all_reduce_bytes(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    backward = events[-1]["summary"]["strategies"]["zero2"]["phases"]["backward"]
    payload = prediction.padded_shard_bytes * WORLD_SIZE
    logical = ring_bytes_per_rank(Collective.REDUCE_SCATTER, payload, WORLD_SIZE)
    as_all_reduce = ring_bytes_per_rank(Collective.ALL_REDUCE, payload, WORLD_SIZE)
    assert backward["logical_bytes"] == logical
    assert abs(backward["wire_bytes"] - as_all_reduce) <= 0.02 * as_all_reduce


@pytest.mark.demo
def test_ddp_second_step_carries_the_bucket_rebuild_broadcasts(
    events: list[dict[str, Any]],
) -> None:
    forward = [
        event["ranks"][0]["phases"]["forward"]["collectives"] for event in _steps(events, "ddp")
    ]
    # Each row is a clean step, then a counted one: row 0 counts DDP's second step.
    assert forward[1] == [] and forward[2] == []
    assert [c["kind"] for c in forward[0]] == ["broadcast"]
    assert 0 < forward[0][0]["payload_bytes"] < 1024


@pytest.mark.demo
def test_the_steps_traced_peak_splits_into_named_terms(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    summary = events[-1]["summary"]["strategies"]
    tokens = PARAMS["batch"] * (PARAMS["seq_len"] + 1) * 8  # int64, one extra for the targets
    gathered = {}
    for strategy in STRATEGIES:
        for rank, peak in enumerate(summary[strategy]["peak"]):
            terms = peak["terms"]
            assert sum(terms.values()) == peak["bytes"]
            exact = prediction.memory(strategy, rank)
            assert (terms["params"], terms["optimizer"]) == (exact["params"], exact["optimizer"])
            assert terms["batch"] == tokens
            assert terms["forward"] > 0  # the activations backward still needs
            if strategy in ("ddp", "zero1"):  # held since DDP rebuilt them, row 0
                assert terms["buckets"] == sum(summary[strategy]["buckets"][rank]["sizes"])
                assert terms["gathered"] == terms["fsdp_buffers"] == 0
            else:
                assert terms["buckets"] == 0
                gathered[strategy] = peak["gathered_after_forward"]
            # the calculator's activations plus what its per-layer count leaves out, exactly
            assert peak["forward_kept"] == prediction.forward_kept_bytes
    # Without resharding after forward, every unit stays gathered into backward; with it, none
    # does, the root's own parameters included (the demo shards the root that way too).
    assert gathered["zero2"] == prediction.padded_shard_bytes * WORLD_SIZE
    assert gathered["zero3"] == 0


@pytest.mark.demo
def test_cpu_ranks_report_no_allocator_figures(events: list[dict[str, Any]]) -> None:
    rows = [row for event in events[1:-1] for row in event["ranks"]]
    assert len(rows) == 24 and all(row["cuda"] is None for row in rows)
    strategies = events[-1]["summary"]["strategies"]
    assert all(strategies[s]["cuda"] == [None, None] for s in STRATEGIES)


@pytest.mark.demo
def test_a_cpu_worker_refuses_a_model_scale_above_one(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "zero_stages", {**PARAMS, "model_scale": 2})
    assert [event["event"] for event in events] == ["error"]
    assert events[0]["message"] == (
        "refused: model scale 2 needs CUDA ranks; this worker runs on cpu, "
        "where the scale is at most 1"
    )


def test_the_largest_model_scale_is_hundreds_of_mb_per_rank() -> None:
    largest = ZeroStagesParams(width=128, layers=4, vocab=1024, seq_len=64, model_scale=8)
    assert largest.d_model == 1024
    # 4 blocks of 12 d^2 + 13 d, two embeddings of 1024 x d, positions 64 x d, final norm 2 d
    params = 4 * (12 * 1024**2 + 13 * 1024) + 2 * 1024 * 1024 + 64 * 1024 + 2 * 1024
    assert sum(math.prod(shape) for shape in largest.shapes()) == params == 52_549_632
    assert ZeroPrediction(largest, 1).memory("ddp", 0)["params"] == 4 * params  # 210 MB


@pytest.mark.parametrize("scale", [0, 3, 16])
def test_model_scale_is_one_of_the_listed_scales(scale: int) -> None:
    with pytest.raises(ValidationError):
        ZeroStagesParams(model_scale=scale)


@pytest.mark.demo
def test_ddp_builds_buckets_as_large_as_the_gradients(
    events: list[dict[str, Any]], prediction: ZeroPrediction
) -> None:
    # torch's default gradient_as_bucket_view=False: DDP's buckets, as its own log lists them,
    # hold every fp32 gradient once more, 4 * 32,448 B, on every rank. On CPU there is no
    # allocator reading to set beside it (demos.live_bytes.cuda_allocator_window).
    summary = events[-1]["summary"]["strategies"]
    assert prediction.ddp_bucket_bytes == 4 * 32_448 == 129_792
    for strategy in ("ddp", "zero1"):
        for buckets in summary[strategy]["buckets"]:
            assert buckets == {"allocated": None, "built": [129_792], "sizes": [129_792]}
    assert summary["zero2"]["buckets"] == summary["zero3"]["buckets"] == [None, None]


@pytest.mark.demo
def test_small_buckets_hold_the_same_bytes_in_more_pieces(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    small = {**PARAMS, "bucket_cap_mb": 0.05}  # 52,428.8 B a bucket
    summary = run_job(address, token, "zero_stages", small)[-1]["summary"]["strategies"]
    for buckets in summary["ddp"]["buckets"]:
        # Built as one (DDP's first bucket takes up to 1 MiB), rebuilt after the first step
        # in gradient-arrival order under the cap: more buckets, the same bytes.
        assert buckets["built"] == [129_792]
        assert len(buckets["sizes"]) > 1
        assert sum(buckets["sizes"]) == 129_792
