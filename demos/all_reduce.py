"""All-reduce (sum) of one float32 buffer: the first collective a learner should see measured.

Each iteration all-reduces the buffer twice, refilled with this rank's values before each: once
counted (its bytes), once clean (its time). Then every element of the clean run's result is
checked against the sum it must have on every rank. On NCCL with its timing events on, the
clean run's time is NCCL's own duration of the kernel (demos.flight_recorder), as nccl-tests
times it; elsewhere it is the wall clock around the run.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from app.calc.comm import Collective, ring_factor
from demos import flight_recorder
from demos.probes import RankInfo, TimedStep, count_then_time
from demos.specs.all_reduce import AllReduceParams

WARMUP: dict[str, Any] = {"size_mib": 1 / 1024, "iterations": 1}
PRELOAD: tuple[str, ...] = ()

# Small integers stay exact in float32 however the ranks' partial sums are ordered.
PATTERN_PERIOD = 8


def rank_values(base: torch.Tensor, rank: int) -> torch.Tensor:
    return base + (rank + 1)


def expected_sum(base: torch.Tensor, world_size: int) -> torch.Tensor:
    return base * world_size + world_size * (world_size + 1) // 2


def run(rank: RankInfo, params: AllReduceParams) -> Iterator[dict[str, Any]]:
    """This rank's side of the demo: one measured all-reduce per yielded row."""
    pattern = torch.arange(PATTERN_PERIOD, dtype=torch.float32, device=rank.device)
    base = pattern.repeat(params.elements // PATTERN_PERIOD + 1)[: params.elements]
    mine = rank_values(base, rank.rank)
    expected = expected_sum(base, rank.world_size)
    buffer = torch.empty_like(mine)
    for _ in range(params.iterations):
        counted, timed = count_then_time(
            lambda: dist.all_reduce(buffer, op=dist.ReduceOp.SUM),
            rank,
            prepare=lambda: buffer.copy_(mine),
        )
        recorded = clean_time_s(timed, rank)
        yield {
            **counted.as_dict(rank.rank),
            "time_s": timed.time_s if recorded is None else recorded,
            "time_source": "wall" if recorded is None else "recorded",
            "wall_time_s": timed.time_s,
            "correct": bool(torch.equal(buffer, expected)),
        }


def clean_time_s(timed: TimedStep, rank: RankInfo) -> float | None:
    """NCCL's own time for the clean run, or None where the backend records none (gloo)."""
    if not flight_recorder.timed(rank.backend):
        return None
    runs = flight_recorder.read([timed.recorded], rank.backend, timed=True)
    times = flight_recorder.durations_s(runs)
    return None if times is None else times[0]


def summary(
    params: AllReduceParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Totals for the `done` event; times follow nccl-tests (slowest rank, median iteration)."""
    rows = [row for event in measurements for row in event["ranks"]]
    # NCCL's own times only where every rank has one for every run: never a mix of clocks
    source = "recorded" if all(row.get("time_source") == "recorded" for row in rows) else "wall"
    key = "time_s" if source == "recorded" else "wall_time_s"
    step_times_s = [
        max(row.get(key, row["time_s"]) for row in event["ranks"]) for event in measurements
    ]
    median_time_s = statistics.median(step_times_s)
    algbw_gbps = params.payload_bytes / median_time_s / 1e9
    return {
        "iterations": len(measurements),
        "world_size": world_size,
        "payload_bytes": params.payload_bytes,
        "logical_bytes_per_rank": statistics.fmean(row["logical_bytes"] for row in rows),
        "wire_bytes_per_rank": [
            statistics.fmean(row["wire_bytes"] for row in rows if row["rank"] == r)
            for r in range(world_size)
        ],
        "median_time_s": median_time_s,
        "time_source": source,
        "algbw_gbps": algbw_gbps,
        "busbw_gbps": algbw_gbps * float(ring_factor(Collective.ALL_REDUCE, world_size)),
        "correct": all(event["correct"] for event in measurements),
    }
