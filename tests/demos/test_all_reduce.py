"""The all-reduce demo, run for real on a 2-rank gloo worker through the app's client."""

from __future__ import annotations

import pytest

from app.calc.comm import Collective, ring_bytes_per_rank
from app.live.worker_process import LocalWorker
from demos.specs.all_reduce import AllReduceParams
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]


@pytest.mark.demo
def test_measured_bytes_match_the_ring_formula(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "all_reduce", {"size_mib": 4, "iterations": 3})

    assert [event["event"] for event in events] == ["accepted"] + ["measurement"] * 3 + ["done"]
    payload = 4 * 2**20
    expected = ring_bytes_per_rank(Collective.ALL_REDUCE, payload, 2)
    for iteration, event in enumerate(events[1:-1]):
        assert event["iteration"] == iteration
        assert event["correct"] is True
        assert [row["rank"] for row in event["ranks"]] == [0, 1]
        for row in event["ranks"]:
            assert row["collectives"] == [
                {
                    "kind": "all_reduce",
                    "count": 1,
                    "payload_bytes": payload,
                    "logical_bytes": expected,
                }
            ]
            assert row["payload_bytes"] == payload
            assert row["logical_bytes"] == expected
            assert abs(row["wire_bytes"] - expected) <= 0.01 * expected
            assert row["time_s"] > 0

    summary = events[-1]["summary"]
    assert summary["iterations"] == 3
    assert summary["world_size"] == 2
    assert summary["payload_bytes"] == payload
    assert summary["logical_bytes_per_rank"] == expected
    assert all(abs(wire - expected) <= 0.01 * expected for wire in summary["wire_bytes_per_rank"])
    assert summary["correct"] is True
    # nccl-tests: busbw = S / t * 2(N-1)/N, and 2(N-1)/N = 1 at N = 2
    assert summary["busbw_gbps"] == pytest.approx(payload / summary["median_time_s"] / 1e9)


@pytest.mark.demo
def test_a_tiny_buffer_is_one_element_and_still_correct(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "all_reduce", {"size_mib": 1e-9, "iterations": 1})

    assert events[0]["params"] == {"size_mib": 1e-9, "iterations": 1}
    assert events[1]["correct"] is True
    assert events[1]["ranks"][0]["payload_bytes"] == 4
    assert events[-1]["event"] == "done"


def _row(rank: int, time_s: float, wire_bytes: int) -> dict:
    return {"rank": rank, "time_s": time_s, "logical_bytes": 6.0, "wire_bytes": wire_bytes}


def test_summary_takes_the_slowest_rank_and_the_median_iteration() -> None:
    from demos.all_reduce import summary

    params = AllReduceParams(size_mib=1, iterations=3)
    measurements = [
        {"correct": True, "ranks": [_row(r, t, w) for r, (t, w) in enumerate(ranks)]}
        for ranks in (
            [(0.010, 100), (0.030, 200), (0.001, 300), (0.001, 400)],  # slowest 0.030
            [(0.020, 110), (0.001, 210), (0.001, 310), (0.001, 410)],  # slowest 0.020
            [(0.001, 120), (0.001, 220), (0.001, 320), (0.050, 420)],  # slowest 0.050
        )
    ]
    result = summary(params, 4, measurements)

    assert result["median_time_s"] == 0.030
    assert result["algbw_gbps"] == pytest.approx(2**20 / 0.030 / 1e9)
    assert result["busbw_gbps"] == pytest.approx(2**20 / 0.030 / 1e9 * 1.5)  # 2(4-1)/4
    assert result["wire_bytes_per_rank"] == [110, 210, 310, 410]
    assert result["iterations"] == 3
    assert result["correct"] is True


def test_nccls_own_times_set_the_median_only_when_every_rank_recorded_them() -> None:
    """Rows as an NCCL worker sends them (no GPU here, so written out): recorded times win;
    one rank without them puts every row back on the wall clock, never a mix."""
    from demos.all_reduce import summary

    params = AllReduceParams(size_mib=1, iterations=1)

    def row(rank: int, source: str) -> dict:
        recorded = source == "recorded"
        return {"rank": rank, "logical_bytes": 0, "wire_bytes": 0, "time_source": source,
                "time_s": 1e-4 if recorded else 5e-3, "wall_time_s": 5e-3}  # fmt: skip

    both = summary(
        params, 2, [{"ranks": [row(0, "recorded"), row(1, "recorded")], "correct": True}]
    )
    assert (both["time_source"], both["median_time_s"]) == ("recorded", 1e-4)
    one = summary(params, 2, [{"ranks": [row(0, "recorded"), row(1, "wall")], "correct": True}])
    assert (one["time_source"], one["median_time_s"]) == ("wall", 5e-3)
