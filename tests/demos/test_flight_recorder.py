"""Reading torch's Flight Recorder (demos.flight_recorder).

The real recorder on gloo is exercised by the collectives demo's tests (tests/demos/
test_collectives.py). NCCL's recorder, the only one that records durations, needs a GPU per
rank, so its dumps here are dicts shaped like torch 2.13's (the keys of FlightRecorder.hpp):
no real object can stand in for one on a CPU machine.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

import pytest

from demos import flight_recorder
from demos.specs.collectives import run_times_s


def entry(record_id: int, name: str, created_ns: int, **fields: Any) -> dict[str, Any]:
    return {
        "record_id": record_id,
        "profiling_name": name,
        "process_group": ["1", "default_pg"],
        "input_sizes": [[1024]],
        "input_dtypes": ["Float"],
        "output_sizes": [[1024]],
        "output_dtypes": ["Float"],
        "time_created_ns": created_ns,
        "state": "completed",
        "retired": True,
        **fields,
    }


NCCL_DUMP = {
    "pg_config": {"1": {"name": "1", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
    "entries": [
        entry(7, "nccl:all_reduce_barrier", 100, input_sizes=[[1]], output_sizes=[[1]]),
        entry(
            8,
            "nccl:_reduce_scatter_base",
            200,
            output_sizes=[[256]],
            input_dtypes=["BFloat16"],
            output_dtypes=["BFloat16"],
            duration_ms=0.25,
        ),
        entry(9, "nccl:send 0->1", 300, duration_ms=0.5),
    ],
}


def test_an_nccl_dump_gives_kind_group_sizes_and_duration() -> None:
    barrier, reduce_scatter, send = flight_recorder.parse(NCCL_DUMP)
    assert barrier.kind == "barrier"
    assert reduce_scatter == flight_recorder.Recorded(
        record_id=8,
        backend="nccl",
        name="_reduce_scatter_base",
        kind="reduce_scatter",
        group="1",
        group_size=4,
        input_bytes=2048,  # 1,024 BF16 elements
        output_bytes=512,
        created_ns=200,
        duration_s=0.25e-3,
        retired=True,
    )
    assert reduce_scatter.payload_bytes == 2048  # nccl-tests' S: the reduce-scatter's input
    assert (send.name, send.kind, send.duration_s) == ("send 0->1", "send", 0.5e-3)


def window(start_ns: int, end_ns: int) -> flight_recorder.Window:
    w = flight_recorder.Window()
    w.start_ns, w.end_ns = start_ns, end_ns
    return w


def test_a_window_holds_what_was_created_inside_it_barriers_left_out() -> None:
    runs = flight_recorder.read(
        [window(50, 250), window(250, 400)], "nccl", timed=False, dumper=lambda _: NCCL_DUMP
    )
    assert [[r.record_id for r in run] for run in runs] == [[8], [9]]


def test_reading_waits_for_the_watchdog_to_retire_each_duration() -> None:
    """NCCL's duration appears only once the watchdog has retired the work."""
    dumps = [
        {"entries": [entry(1, "nccl:all_reduce", 10, retired=False, state="started")]},
        {"entries": [entry(1, "nccl:all_reduce", 10, duration_ms=2.0)]},
    ]
    calls = []

    def dumper(backend: str) -> dict[str, Any]:
        calls.append(backend)
        return dumps[min(len(calls) - 1, 1)]

    [[record]] = flight_recorder.read([window(0, 20)], "nccl", timed=True, dumper=dumper)
    assert record.duration_s == 2e-3
    assert len(calls) == 2


def test_a_duration_that_never_comes_leaves_the_wall_clock_in_charge() -> None:
    late = {"entries": [entry(1, "nccl:all_reduce", 10, retired=False)]}
    started = time.monotonic()
    [[record]] = flight_recorder.read(
        [window(0, 20)], "nccl", timed=True, dumper=lambda _: late, wait_s=0.05
    )
    assert record.duration_s is None
    assert time.monotonic() - started < 1
    assert flight_recorder.durations_s([[record]]) is None


def test_times_come_from_the_backend_only_when_every_rank_recorded_every_run() -> None:
    def run(durations: list[float | None]) -> list[flight_recorder.Recorded]:
        records = flight_recorder.parse({"entries": [entry(1, "nccl:all_reduce", 0)]})
        return [replace(records[0], duration_s=d) for d in durations]

    assert flight_recorder.durations_s([run([1e-3]), run([2e-3, 1e-3])]) == pytest.approx(
        [1e-3, 3e-3]
    )
    assert flight_recorder.durations_s([run([1e-3]), run([None])]) is None
    assert flight_recorder.durations_s([run([])]) is None

    nccl = [{"times_s": [9.0], "recorded_times_s": [1e-3]}] * 2
    assert run_times_s(nccl) == ([[1e-3], [1e-3]], "recorded")
    mixed = [{"times_s": [9.0], "recorded_times_s": [1e-3]}, {"times_s": [8.0]}]
    assert run_times_s(mixed) == ([[9.0], [8.0]], "wall")


def test_enable_keeps_what_the_user_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_NCCL_ENABLE_TIMING", "0")
    monkeypatch.delenv("TORCH_FR_BUFFER_SIZE", raising=False)
    flight_recorder.enable()
    assert flight_recorder.timed("nccl") is False
    assert flight_recorder.timed("gloo") is False
    assert os.environ["TORCH_FR_BUFFER_SIZE"] == "256"
