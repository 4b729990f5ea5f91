"""Each demo's `done` summary beside its page's prediction, as rows of one table.

Measured figures come from the demo's `summary` (demos/<demo>.py), predicted ones from its
page (app/live/pages/<demo>.py, numbers from app.calc only), and each agreement is the one the
page's summary template shows. Times have no prediction: they are listed, never judged. Wire
bytes are judged on gloo only: NCCL over NVLink writes nothing a process's `wchar` counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    quantity: str
    measured: Any
    predicted: Any = None
    agrees: bool | None = None  # None: shown for information, not judged

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def equal(quantity: str, measured: Any, predicted: Any) -> Check:
    """A figure that must equal its prediction exactly (bytes, counts, flags)."""
    return Check(quantity, measured, predicted, measured == predicted)


def all_reduce(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    return [
        equal("result correct", summary["correct"], True),
        equal(
            "logical bytes per rank", summary["logical_bytes_per_rank"], prediction.bytes_per_rank
        ),
        Check("median time (s)", summary["median_time_s"]),
        Check("bus bandwidth (GB/s)", summary["busbw_gbps"]),
    ]


def collectives(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    checks = []
    for result in summary["results"]:
        kind, payload = result["kind"], result["payload_bytes"]
        label = f"{kind} {payload} B"
        logical = result["logical_bytes_per_rank"]
        checks += [
            equal(f"{label}: correct", result["correct"], True),
            Check(
                f"{label}: logical bytes per rank",
                logical,
                prediction.logical_bytes(kind, payload),
                prediction.logical_agrees(kind, payload, logical),
            ),
            Check(f"{label}: bus bandwidth (GB/s)", result["busbw_gbps"]),
        ]
        if backend == "gloo":
            wire = result["wire_bytes_per_rank"]
            checks.append(
                Check(
                    f"{label}: wire bytes per rank (gloo)",
                    wire,
                    prediction.wire_bytes(kind, payload),
                    prediction.wire_agrees(kind, payload, wire),
                )
            )
    return checks


def tensor_parallel(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    checks = []
    for layout in summary["layouts"]:
        name = layout["layout"]
        checks.append(equal(f"{name}: outputs and gradients", layout["correct"], True))
        for pass_, measured in layout["passes"].items():
            collectives_ = measured["collectives"]
            checks += [
                Check(
                    f"{name} {pass_}: collectives",
                    [prediction.describe(c) for c in collectives_],
                    [prediction.describe(c) for c in prediction.by_kind(name, pass_)],
                    prediction.matches(name, pass_, collectives_),
                ),
                Check(f"{name} {pass_}: median time (s)", measured["median_time_s"]),
            ]
    return checks


def pipeline_schedules(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    checks = []
    for schedule in summary["schedules"]:
        predicted = prediction.of(schedule["schedule"])
        name = schedule["schedule"]
        sends = [messages.sends for messages in predicted.messages]
        checks += [
            equal(f"{name}: sends per rank", schedule["sends"], sends),
            Check(
                f"{name}: gradients match",
                schedule["grad_error"],
                "<= 1e-6",
                schedule["grad_error"] <= 1e-6,
            ),
            Check(
                f"{name}: bubble fraction (simulated)",
                schedule["bubble_fraction"],
                predicted.simulation.bubble_fraction_of_total,
            ),
        ]
    for name, why in summary["skipped"].items():
        checks.append(Check(f"{name}: not run", why))
    return checks


def mixed_precision(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    checks = []
    for case in summary["cases"]:
        predicted = prediction.of(case["case"])
        name = case["case"]
        checks += [
            equal(f"{name}: step skipped", case["step_skipped"], predicted.step_skipped),
            equal(f"{name}: all-reduce payload", case["payload_bytes"], predicted.payload_bytes),
            Check(f"{name}: zero fraction", case["zero_fraction"], predicted.zero_fraction),
        ]
    for fmt in prediction.formats():
        measured = summary["range"]["formats"][fmt.name]["casts"]
        predicted_casts = prediction.range_prediction(fmt.name)
        checks.append(equal(f"{fmt.name} casts", measured, predicted_casts))
    return checks


def activation_checkpointing(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    checks = []
    for mode in summary["modes"]:
        predicted = prediction.of(mode["mode"])
        name = mode["mode"]
        checks += [
            Check(
                f"{name}: saved bytes",
                mode["saved_bytes"],
                predicted.saved_bytes,
                mode["same_on_every_rank"] and mode["saved_bytes"] == predicted.saved_bytes,
            ),
            Check(
                f"{name}: backward peak bytes",
                mode["peak_bytes"],
                predicted.peak.total,
                mode["peak_same_on_every_rank"]
                and mode["peak_bytes"] == predicted.peak.total
                and mode["peak_segment"] == predicted.peak.segment,
            ),
            equal(f"{name}: gradients equal", mode["gradients_equal"], True),
            Check(f"{name}: time vs no recompute", mode["time_vs_none"], prediction.compute_ratio),
        ]
        if mode["allocator_peak_bytes"] is not None:  # CUDA ranks only
            checks.append(Check(f"{name}: CUDA allocator peak bytes", mode["allocator_peak_bytes"]))
    return checks


def zero_stages(summary: dict[str, Any], prediction: Any, backend: str) -> list[Check]:
    checks = [equal("losses coincide with DDP's", summary["correct"], True)]
    for strategy, measured in summary["strategies"].items():
        for rank, memory in enumerate(measured["memory"]):
            exact = prediction.memory(strategy, rank)
            for kind, bytes_ in exact.items():
                checks.append(equal(f"{strategy} rank {rank}: {kind} bytes", memory[kind], bytes_))
        for call in prediction.collectives(strategy):
            found = [
                c for c in measured["phases"][call.phase]["collectives"] if c["kind"] == call.kind
            ]
            logical = found[0]["logical_bytes"] if found else 0
            label = f"{strategy} {call.phase}: {call.kind} logical bytes"
            checks.append(equal(label, logical, call.logical_bytes))
        for rank, cuda in enumerate(measured["cuda"]):
            if cuda is not None:  # CUDA ranks only: the allocator beside the tensor accounting
                checks.append(
                    Check(
                        f"{strategy} rank {rank}: CUDA peak / reserved bytes",
                        [cuda["step"]["max_allocated"], cuda["step"]["reserved"]],
                        sum(
                            prediction.memory(strategy, rank)[k]
                            for k in ("params", "grads", "optimizer")
                        ),
                    )
                )
        checks.append(Check(f"{strategy}: median step time (s)", measured["median_time_s"]))
    return checks


CHECKS: dict[str, Callable[[dict[str, Any], Any, str], list[Check]]] = {
    "all_reduce": all_reduce,
    "collectives": collectives,
    "tensor_parallel": tensor_parallel,
    "pipeline_schedules": pipeline_schedules,
    "mixed_precision": mixed_precision,
    "activation_checkpointing": activation_checkpointing,
    "zero_stages": zero_stages,
}
