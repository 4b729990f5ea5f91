"""The five collectives over a sweep of sizes, timed the way nccl-tests times them.

For each size S and collective, every run does the collective twice, each time with refilled
buffers and the ranks started together by a barrier: once counted (logical and wire bytes),
once clean (its time), then checks every element of the clean run's result. One row per size
and collective holds the runs' times and wire bytes; app.calc turns them into algorithm and bus
bandwidth.

A clean run's time is NCCL's own where the backend records one: the duration between the CUDA
events ProcessGroupNCCL puts around the kernel, from torch's Flight Recorder
(demos.flight_recorder), which is what nccl-tests times. Gloo records none, so there the time
is the wall clock around the clean run, synchronised. Every row also carries what the backend
logged of the clean run (its name for the op, group, sizes), beside what the counter saw.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch
import torch.distributed as dist

from app.calc.bandwidth import algbw_bytes_per_s, busbw_bytes_per_s, slowest_rank_median_s
from app.calc.comm import Collective
from demos import flight_recorder
from demos.collective_calls import all_gather_single, reduce_scatter_single
from demos.probes import RankInfo, count_then_time
from demos.specs.collectives import KINDS, CollectivesParams, run_times_s

WARMUP: dict[str, Any] = {"max_size_mib": 1 / 1024, "sizes": 1, "iterations": 1}
PRELOAD: tuple[str, ...] = ()

# Small integers stay exact in float32 however partial sums are ordered.
PATTERN_PERIOD = 8
ROOT = 0


class Buffers:
    """Inputs, outputs and expected results of each collective for S = `elements` floats.

    Fills and expected results are built for one collective at a time, so a rank holds about
    six buffers of S (about 100 MB at the 16 MiB bound) rather than one per collective.
    """

    def __init__(self, rank: RankInfo, elements: int) -> None:
        self.n, self.r = rank.world_size, rank.rank
        self.chunk = elements // self.n
        device = rank.device
        pattern = torch.arange(PATTERN_PERIOD, dtype=torch.float32, device=device)
        self.base = pattern.repeat(elements // PATTERN_PERIOD + 1)[:elements]
        self.mine = self.base[self.r * self.chunk : (self.r + 1) * self.chunk]
        self.input = torch.empty(elements, dtype=torch.float32, device=device)
        self.output = torch.empty(elements, dtype=torch.float32, device=device)

    def _owner(self) -> torch.Tensor:
        """Per element, the rank whose chunk it is in (as float32, exact for small ranks)."""
        positions = torch.arange(self.base.numel(), device=self.base.device)
        return torch.div(positions, self.chunk, rounding_mode="floor").to(torch.float32)

    def fill(self, kind: str) -> torch.Tensor:
        """What this rank puts in before the collective."""
        n, r = self.n, self.r
        if kind == "all_gather":
            return self.mine + (r + 1)
        if kind == "broadcast":
            return self.base + 1 if r == ROOT else torch.zeros_like(self.base)
        if kind == "all_to_all":
            return self.base + r * n
        return self.base + (r + 1)  # all-reduce, reduce-scatter

    def expected(self, kind: str) -> torch.Tensor:
        """What this rank must hold after it."""
        n, r, chunk = self.n, self.r, self.chunk
        total = self.base * n + n * (n + 1) // 2  # sum over ranks of base + (rank + 1)
        if kind == "reduce_scatter":
            return total[r * chunk : (r + 1) * chunk].clone()
        if kind == "all_gather":
            return self.base + self._owner() + 1
        if kind == "broadcast":
            return self.base + 1
        if kind == "all_to_all":
            return self.mine.repeat(n) + self._owner() * n  # chunk j came from rank j
        return total

    def prepare(self, kind: str, source: torch.Tensor) -> tuple[Callable[[], object], torch.Tensor]:
        """Refill the input; return the collective to time and the tensor holding its result."""
        self.input[: source.numel()].copy_(source)
        part_in, part_out = self.input[: self.chunk], self.output[: self.chunk]
        calls: dict[str, tuple[Callable[[], object], torch.Tensor]] = {
            "all_reduce": (lambda: dist.all_reduce(self.input), self.input),
            "reduce_scatter": (lambda: reduce_scatter_single(part_out, self.input), part_out),
            "all_gather": (lambda: all_gather_single(self.output, part_in), self.output),
            "broadcast": (lambda: dist.broadcast(self.input, src=ROOT), self.input),
            "all_to_all": (lambda: dist.all_to_all_single(self.output, self.input), self.output),
        }
        return calls[kind]


def device_name(rank: RankInfo) -> str:
    """What the page looks the link up by (app.calc.hardware.accelerator_for_device)."""
    return torch.cuda.get_device_name(rank.device) if rank.device.type == "cuda" else "cpu"


def run(rank: RankInfo, params: CollectivesParams) -> Iterator[dict[str, Any]]:
    """This rank's side: one row per size and collective, each run in its own window."""
    device = device_name(rank)
    for payload in params.payload_bytes(rank.world_size):
        buffers = Buffers(rank, payload // 4)
        for kind in KINDS:
            source, expected = buffers.fill(kind), buffers.expected(kind)
            times, wires, windows, correct = [], [], [], True
            collective, result = buffers.prepare(kind, source)
            for _ in range(params.iterations):
                counted, timed = count_then_time(
                    collective, rank, prepare=partial(buffers.prepare, kind, source)
                )
                times.append(timed.time_s)
                wires.append(counted.wire_bytes)
                windows.append(timed.recorded)
                correct = correct and bool(torch.equal(result, expected))
            recorded = flight_recorder.read(
                windows, rank.backend, timed=flight_recorder.timed(rank.backend)
            )
            yield {
                "rank": rank.rank,
                "device": device,
                "backend": rank.backend,
                "kind": kind,
                "payload_bytes": payload,
                "times_s": times,
                "recorded_times_s": flight_recorder.durations_s(recorded),
                "wire_bytes": wires,
                "logical_bytes": counted.counter.logical_bytes(),
                "collectives": counted.counter.by_kind(),
                "recorded": [record.as_dict() for record in recorded[0]],
                "correct": correct,
            }


def summary(
    params: CollectivesParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per size and collective: time, algbw and busbw (GB/s), logical and wire bytes per rank."""
    results = []
    for event in measurements:
        ranks = event["ranks"]
        kind, payload = ranks[0]["kind"], ranks[0]["payload_bytes"]
        times, source = run_times_s(ranks)
        time_s = slowest_rank_median_s(times)
        results.append(
            {
                "kind": kind,
                "payload_bytes": payload,
                "median_time_s": time_s,
                "time_source": source,
                "wall_time_s": slowest_rank_median_s([row["times_s"] for row in ranks]),
                "algbw_gbps": algbw_bytes_per_s(payload, time_s) / 1e9,
                "busbw_gbps": busbw_bytes_per_s(Collective(kind), payload, world_size, time_s)
                / 1e9,
                "logical_bytes_per_rank": [row["logical_bytes"] for row in ranks],
                "wire_bytes_per_rank": [statistics.fmean(row["wire_bytes"]) for row in ranks],
                "issued": [row["collectives"] for row in ranks],
                "recorded": [row["recorded"] for row in ranks],
                "correct": event["correct"],
            }
        )
    first = measurements[0]["ranks"][0] if measurements else {}
    return {
        "world_size": world_size,
        "iterations": params.iterations,
        "device": first.get("device", "cpu"),
        "backend": first.get("backend"),
        "results": results,
    }
