"""The collectives demo on a real 2-rank gloo worker: logical bytes equal app.calc's ring
bytes exactly; wire bytes follow gloo's algorithms (app.calc.gloo) up to message headers."""

from __future__ import annotations

import pytest

from app.calc.comm import Collective, ring_bytes_per_rank
from app.calc.gloo import gloo_bytes_per_rank
from app.live.worker_process import LocalWorker
from demos.specs.collectives import KINDS, CollectivesParams
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]
HEADER_ALLOWANCE_BYTES = 1024  # measured: 48 to 576 B per collective at 2 ranks


@pytest.mark.demo
def test_sweep_measures_every_collective_at_every_size(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    params = {"max_size_mib": 1, "sizes": 2, "iterations": 2}
    events = run_job(address, token, "collectives", params)

    assert [e["event"] for e in events] == ["accepted"] + ["measurement"] * 10 + ["done"]
    sizes = [2**18, 2**20]  # 256 KiB and 1 MiB
    seen = [(e["ranks"][0]["payload_bytes"], e["ranks"][0]["kind"]) for e in events[1:-1]]
    assert seen == [(size, kind) for size in sizes for kind in KINDS]
    for event in events[1:-1]:
        assert event["correct"] is True
        for row in event["ranks"]:
            kind, payload = Collective(row["kind"]), row["payload_bytes"]
            logical = ring_bytes_per_rank(kind, payload, 2)
            assert row["collectives"] == [
                {"kind": kind.value, "count": 1, "payload_bytes": payload, "logical_bytes": logical}
            ]
            wire = gloo_bytes_per_rank(kind, payload, 2, row["rank"])
            for written in row["wire_bytes"]:
                assert wire <= written <= wire + HEADER_ALLOWANCE_BYTES
            assert len(row["times_s"]) == 2


@pytest.mark.demo
def test_gloo_reduce_scatter_writes_what_a_whole_all_reduce_writes(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "collectives", {"max_size_mib": 1, "sizes": 1})
    results = {r["kind"]: r for r in events[-1]["summary"]["results"]}

    rs, ag, ar = results["reduce_scatter"], results["all_gather"], results["all_reduce"]
    # Logically reduce-scatter + all-gather is an all-reduce: (N-1)/N S + (N-1)/N S = 2(N-1)/N S.
    assert rs["logical_bytes_per_rank"][0] + ag["logical_bytes_per_rank"][0] == 2**20
    assert ar["logical_bytes_per_rank"][0] == 2**20
    # On gloo the reduce-scatter alone writes as much as the all-reduce.
    assert rs["wire_bytes_per_rank"] == ar["wire_bytes_per_rank"]
    assert rs["wire_bytes_per_rank"][0] >= 2 * rs["logical_bytes_per_rank"][0]
    # nccl-tests: busbw = S / t * (N-1)/N for reduce-scatter.
    assert rs["busbw_gbps"] == pytest.approx(2**20 / rs["median_time_s"] / 1e9 / 2)
    # Broadcast from rank 0: the root writes S, the other rank (a leaf) almost nothing.
    assert results["broadcast"]["wire_bytes_per_rank"][1] < HEADER_ALLOWANCE_BYTES


@pytest.mark.demo
def test_the_backend_records_each_clean_run_as_gloo_runs_it(demo_worker: WorkerInfo) -> None:
    """torch's Flight Recorder on gloo: one entry per clean run, in the default group of 2,
    with the sizes the counter saw; the reduce-scatter logged as the all-reduce gloo runs.
    Gloo records no duration, so the times are the wall clock's."""
    _, address, token = demo_worker
    events = run_job(address, token, "collectives", {"max_size_mib": 1, "sizes": 1})
    s = 2**20
    # the backend's name, input bytes and output bytes of one rank's clean run
    expected = {
        "all_reduce": ("all_reduce", s, s),
        "reduce_scatter": ("all_reduce", s, s),  # gloo reduces all of S, then keeps its half
        "all_gather": ("all_gather", s // 2, s),
        "broadcast": ("broadcast", s, s),
        "all_to_all": ("all_to_all", s, s),
    }
    for event in events[1:-1]:
        for row in event["ranks"]:
            name, input_bytes, output_bytes = expected[row["kind"]]
            assert row["recorded"] == [
                {
                    "backend": "gloo",
                    "name": name,
                    "kind": name,
                    "group": "0",
                    "group_size": 2,
                    "input_bytes": input_bytes,
                    "output_bytes": output_bytes,
                    "payload_bytes": s,  # nccl-tests' S: the larger of input and output
                    "duration_s": None,
                }
            ]
            assert row["recorded_times_s"] is None
    for result in events[-1]["summary"]["results"]:
        assert result["time_source"] == "wall"
        assert result["median_time_s"] == result["wall_time_s"]


def test_sizes_are_a_multiple_of_the_ranks_in_float32() -> None:
    params = CollectivesParams(max_size_mib=1, sizes=3)
    assert params.payload_bytes(2) == [2**16, 2**18, 2**20]
    assert params.payload_bytes(3) == [65_532, 262_140, 1_048_572]  # 3 x 5,461 floats, ...
    assert CollectivesParams(max_size_mib=1e-6, sizes=2).payload_bytes(4) == [16]


def test_the_page_allows_gloo_headers_but_not_a_ring_sized_reduce_scatter() -> None:
    from app.live.pages.collectives import CollectivesPrediction

    prediction = CollectivesPrediction(CollectivesParams(max_size_mib=16), world_size=4)
    s = 16 * 2**20
    # measured at 4 ranks: 3,456 B of headers on 24 MiB
    assert prediction.wire_agrees("all_reduce", s, [25_169_280] * 4)
    assert prediction.wire_agrees("broadcast", s, [33_554_624, 16_777_360, 48, 48])
    # a reduce-scatter writing only the ring's (N-1)/N S would not be gloo's algorithm
    assert not prediction.wire_agrees("reduce_scatter", s, [12_582_912 + 864] * 4)
