"""What bench/gpu_check.py lists under a demo's verdict: the figures no page judges.

The judgement is the page's own (app/live/pages/<demo>.py: `PAGE.predict`, then
`PAGE.verdict`), so the bench and the web page cannot judge a run differently. Left for the
bench is the rest of the `done` summary (demos/<demo>.py) that a GPU box is run to read: times
and bandwidths, which have no prediction; the CUDA caching allocator's bytes, which no
calculator predicts (it rounds blocks up and keeps freed ones), beside the tensor accounting;
and why a pipeline schedule was not run. Listed, never judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ALLOCATOR = "CUDA allocated after forward, backward, step; step peak; reserved (B)"
# The page shows the traced peak's terms; listed here so a GPU run's report keeps them beside
# the allocator's peak (demos.zero_stages.peak_terms).
TRACED_PEAK = "traced peak: phase, op, bytes, and its terms (B)"


@dataclass(frozen=True)
class Figure:
    quantity: str
    scope: str
    measured: Any


# Where a time came from: NCCL's CUDA events (demos/flight_recorder.py) or the wall clock.
CLOCKS = {"recorded": "NCCL events", "wall": "wall clock"}


def all_reduce(summary: dict[str, Any]) -> list[Figure]:
    clock = CLOCKS[summary.get("time_source", "wall")]
    return [
        Figure("median time (s)", clock, summary["median_time_s"]),
        Figure("bus bandwidth (GB/s)", clock, summary["busbw_gbps"]),
    ]


def collectives(summary: dict[str, Any]) -> list[Figure]:
    return [
        Figure(
            "bus bandwidth (GB/s)",
            f"{r['kind']} {r['payload_bytes']} B, {CLOCKS[r.get('time_source', 'wall')]}",
            r["busbw_gbps"],
        )
        for r in summary["results"]
    ]


def tensor_parallel(summary: dict[str, Any]) -> list[Figure]:
    return [
        Figure("median time (s)", f"{layout['layout']} {pass_}", measured["median_time_s"])
        for layout in summary["layouts"]
        for pass_, measured in layout["passes"].items()
    ]


def pipeline_schedules(summary: dict[str, Any]) -> list[Figure]:
    return [Figure("not run", name, why) for name, why in summary["skipped"].items()]


def activation_checkpointing(summary: dict[str, Any]) -> list[Figure]:
    return [
        Figure("CUDA allocator peak (B)", mode["mode"], mode["allocator_peak_bytes"])
        for mode in summary["modes"]
        if mode["allocator_peak_bytes"] is not None  # CUDA ranks only
    ]


def zero_stages(summary: dict[str, Any]) -> list[Figure]:
    figures = []
    for strategy, measured in summary["strategies"].items():
        for rank, (cuda, memory) in enumerate(
            zip(measured["cuda"], measured["memory"], strict=True)
        ):
            if cuda is None:  # CPU ranks: torch keeps no allocator statistics there
                continue
            scope = f"{strategy} rank {rank}"
            allocated = [cuda[phase]["allocated"] for phase in ("forward", "backward", "step")]
            peak_and_reserved = [cuda["step"]["max_allocated"], cuda["step"]["reserved"]]
            figures += [
                Figure(ALLOCATOR, scope, allocated + peak_and_reserved),
                Figure(
                    "model states, tensor accounting (B)",
                    scope,
                    memory["params"] + memory["grads"] + memory["optimizer"],
                ),
            ]
        for rank, peak in enumerate(measured.get("peak") or []):
            figures.append(
                Figure(TRACED_PEAK, f"{strategy} rank {rank}",
                       [peak["phase"], peak["op"], peak["bytes"], peak["terms"]])
            )  # fmt: skip
        figures.append(Figure("median step time (s)", strategy, measured["median_time_s"]))
    return figures


FIGURES: dict[str, Callable[[dict[str, Any]], list[Figure]]] = {
    "all_reduce": all_reduce,
    "collectives": collectives,
    "tensor_parallel": tensor_parallel,
    "pipeline_schedules": pipeline_schedules,
    "activation_checkpointing": activation_checkpointing,
    "zero_stages": zero_stages,
}


def figures(demo: str, summary: dict[str, Any]) -> list[Figure]:
    """The summary's unjudged figures; none for a demo whose verdict covers all it measures."""
    return FIGURES[demo](summary) if demo in FIGURES else []
