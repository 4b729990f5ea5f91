"""The pipeline-schedules demo, run for real on the 2-rank gloo worker through the app's client."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.calc.pipeline import SCHEDULES, p2p_messages_per_stage, simulate, stage_orders
from app.live.pages.pipeline_schedules import PipelinePrediction, verdict
from app.live.worker_process import LocalWorker
from demos.specs.pipeline_schedules import PipelineSchedulesParams
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]

FIXED = {"microbatches": 4, "forward_ms": 20, "backward_ms": 40, "hidden": 32, "microbatch_size": 4}


def _order(actions: list[list]) -> list[tuple[str, int, int]]:
    return [(kind, mb, chunk) for kind, mb, chunk, _start, _end in actions]


@pytest.fixture(scope="module")
def fixed_run(demo_worker: WorkerInfo) -> list[dict]:
    _, address, token = demo_worker
    return run_job(address, token, "pipeline_schedules", {"schedule": "all", **FIXED})


@pytest.mark.demo
def test_every_schedule_runs_in_the_simulators_order_with_exact_gradients(
    fixed_run: list[dict],
) -> None:
    assert [e["event"] for e in fixed_run] == ["accepted"] + ["measurement"] * 4 + ["done"]
    params = PipelineSchedulesParams(**FIXED)
    for event, name in zip(fixed_run[1:-1], SCHEDULES, strict=True):
        assert event["correct"] is True
        orders = stage_orders(params.setup(name, 2))
        for row in event["ranks"]:
            assert row["schedule"] == name
            assert row["grad_error"] <= 1e-6
            # torch runs exactly the order app.calc.pipeline simulates, action by action.
            expected = [(a.kind, a.microbatch, a.chunk) for a in orders[row["rank"]]]
            assert _order(row["actions"]) == expected


@pytest.mark.demo
def test_sends_and_receives_are_the_predicted_messages_of_one_activation_each(
    fixed_run: list[dict],
) -> None:
    params = PipelineSchedulesParams(**FIXED)
    activation = 4 * 32 * 4  # rows x width x float32
    for event, name in zip(fixed_run[1:-1], SCHEDULES, strict=True):
        messages = p2p_messages_per_stage(params.setup(name, 2))
        for row in event["ranks"]:
            predicted = messages[row["rank"]]
            kinds = {c["kind"]: c for c in row["collectives"]}
            assert set(kinds) == {"send", "recv"}
            assert kinds["send"]["count"] == predicted.sends  # 4, or 12 interleaved
            assert kinds["send"]["payload_bytes"] == predicted.sends * activation
            assert kinds["recv"]["count"] == predicted.recvs
            # gloo adds a small header to each message, no more.
            assert 0 <= row["wire_bytes"] - predicted.sends * activation <= 200 * predicted.sends


@pytest.mark.demo
def test_measured_bubble_and_in_flight_follow_the_simulation(fixed_run: list[dict]) -> None:
    params = PipelineSchedulesParams(**FIXED)
    summary = fixed_run[-1]["summary"]
    assert summary["correct"] is True and summary["skipped"] == {}
    assert [s["schedule"] for s in summary["schedules"]] == list(SCHEDULES)
    for measured in summary["schedules"]:
        sim = simulate(params.setup(measured["schedule"], 2))
        # Same order, so the same micro-batches are held at the peak: exactly.
        assert measured["peak_in_flight"] == sim.peak_in_flight
        # Sleep-based compute lands a few points above theory (feasibility §7); never below.
        assert sim.bubble_fraction_of_total - 0.02 <= measured["bubble_fraction"]
        assert measured["bubble_fraction"] <= sim.bubble_fraction_of_total + 0.15
        assert measured["step_ms"] >= sim.total_time * 0.98
    gpipe = simulate(params.setup("gpipe", 2))
    assert gpipe.bubble_fraction_of_total == pytest.approx(1 / 5)  # (p-1)/(m+p-1)


@pytest.mark.demo
def test_real_compute_runs_and_matches_the_reference(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    params = {"schedule": "1f1b", "compute": "real", "microbatches": 2, "hidden": 64}
    events = run_job(address, token, "pipeline_schedules", params)
    assert [e["event"] for e in events] == ["accepted", "measurement", "done"]
    assert events[1]["correct"] is True
    orders = stage_orders(PipelineSchedulesParams(**params).setup("1f1b", 2))
    for row in events[1]["ranks"]:
        assert _order(row["actions"]) == [
            (a.kind, a.microbatch, a.chunk) for a in orders[row["rank"]]
        ]


@pytest.mark.demo
def test_interleaved_with_as_many_micro_batches_as_ranks_runs_as_the_page_predicts(
    demo_worker: WorkerInfo,
) -> None:
    # m = p: torch's warm-up is not Megatron-LM's here (tests/calc/test_pipeline_torch_order.py),
    # so the last rank starts 1F1B before its last forward; the page predicts torch's order.
    _, address, token = demo_worker
    params = {**FIXED, "schedule": "interleaved", "microbatches": 2}
    events = run_job(address, token, "pipeline_schedules", params)
    assert [e["event"] for e in events] == ["accepted", "measurement", "done"]
    prediction = PipelinePrediction(PipelineSchedulesParams(**params), 2)
    assert prediction.torch_order_differs
    orders = stage_orders(prediction.setup("interleaved"))
    for row in events[1]["ranks"]:
        expected = [(a.kind, a.microbatch, a.chunk) for a in orders[row["rank"]]]
        assert _order(row["actions"]) == expected
    assert events[1]["ranks"][1]["actions"][3][0] == "BW"  # F00 F10 F01 BW01 F11 ...
    checks = verdict(events[-1]["summary"], prediction, "gloo")
    assert [c for c in checks if c.status == "unexpected"] == []
    peaks = next(c for c in checks if c.quantity.startswith("Peak micro-batches"))
    assert peaks.status == "equal" and peaks.predicted == [2.0, 1.5]


@pytest.mark.demo
def test_a_schedule_the_world_size_cannot_run_is_a_clear_error(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(
        address, token, "pipeline_schedules", {"schedule": "interleaved", "microbatches": 3}
    )
    assert events[-1]["event"] == "error"
    assert "micro-batches to be a multiple of the stages" in events[-1]["message"]


@pytest.mark.demo
def test_all_schedules_skip_zb_h1_where_torch_cannot_split_the_rounds(
    demo_worker: WorkerInfo,
) -> None:
    # m = 5 on 2 ranks: torch's ZB-H1 wants 5 // 2 = 2 equal rounds; the job used to fail whole.
    _, address, token = demo_worker
    params = {**FIXED, "schedule": "all", "microbatches": 5, "forward_ms": 1, "backward_ms": 2}
    events = run_job(address, token, "pipeline_schedules", params)
    assert events[-1]["event"] == "done"
    skipped = events[-1]["summary"]["skipped"]
    assert skipped["zb-h1"] == (
        "torch's ZB-H1 runs the micro-batches in 2 equal rounds (m // p), so m must be a "
        "multiple of 2"
    )
    assert "interleaved" in skipped and "gpipe" not in skipped and "1f1b" not in skipped


@pytest.mark.parametrize(
    ("microbatches", "ranks", "runs"),
    [(5, 2, False), (6, 2, True), (7, 2, False), (8, 2, True), (3, 2, True), (7, 3, False),
     (8, 3, True), (4, 4, True)],
)  # fmt: skip
def test_zb_h1_runs_where_torchs_rounds_divide_the_micro_batches(
    microbatches: int, ranks: int, runs: bool
) -> None:
    params = PipelineSchedulesParams(schedule="zb-h1", microbatches=microbatches)
    assert (not params.problems("zb-h1", ranks)) is runs


@pytest.mark.parametrize(
    "bad",
    [{"microbatches": 13}, {"forward_ms": 0.5}, {"backward_ms": 51}, {"hidden": 1024},
     {"schedule": "looped-bfs"}, {"compute": "gpu"}, {"layers": 3}],
)  # fmt: skip
def test_params_out_of_bounds_are_refused(bad: dict) -> None:
    with pytest.raises(ValidationError):
        PipelineSchedulesParams(**bad)
