"""Generated questions on the compute & time calculator (app.calc.flops via compute_query).

Every answer comes from `compute_result`, the calculator's full answer, and the worked steps
are the rows the calculator page writes (app.worked.compute), so a question is
graded and explained by exactly what /calculators/compute shows for the same inputs. The
model is always 'custom' with N given, so the learner can work from the prompt alone.
Inputs a question does not draw take the calculator's defaults (ComputeQuery).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.calc.compute_query import ComputeQuery, compute_result
from app.calc.flops import MODE_LABELS
from app.calc.hardware import ACCELERATORS
from app.formatting import count_short, latex_number
from app.i18n import N_, gettext
from app.quiz.generators.solution import Solution
from app.worked.compute import compute_formulas

# Index -> name; YAML items draw the index.
MODE_ORDER = tuple(MODE_LABELS)  # training, training_recompute, inference
GPU_ORDER = ("a100-80gb-sxm", "h100-sxm", "h200", "b200", "mi300x", "tpu-v5e")
_MODE_WORDS = {
    "training": N_("training (forward and backward, no recompute)"),
    "training_recompute": N_("training with full activation recompute"),
    "inference": N_("inference (forward only)"),
    "training_selective": N_("training with selective recompute (attention's core rerun)"),
}


def _query(inputs: Mapping[str, float]) -> ComputeQuery:
    fields: dict[str, Any] = {"preset": "custom", "params": float(inputs["params"])}
    for name in ("tokens", "utilization", "measured_tokens_per_s", "achieved_flops_per_gpu"):
        if name in inputs:
            fields[name] = float(inputs[name])
    if "gpus" in inputs:
        fields["gpus"] = int(inputs["gpus"])
    fields["mode"] = MODE_ORDER[int(inputs.get("mode", 0))]
    if "gpu" in inputs:
        fields["gpu"] = GPU_ORDER[int(inputs["gpu"])]
    return ComputeQuery(**fields)


def _fields(query: ComputeQuery, r: dict[str, Any]) -> dict[str, str]:
    fields = {
        "params": count_short(r["params"]),
        "tokens": gettext("{count} tokens").format(count=count_short(r["tokens"])),
        "mode": gettext(_MODE_WORDS[query.mode]),
        "gpu": ACCELERATORS[query.gpu].name,
        "peak": f"{r['peak_flops_per_gpu'] / 1e12:,.4g} TFLOP/s",
        "gpus": f"{query.gpus:,}",
        "utilization": f"{100 * query.utilization:.4g}%",
    }
    if query.measured_tokens_per_s is not None:
        fields["tokens_per_s"] = f"{query.measured_tokens_per_s:,.0f}"
    if query.achieved_flops_per_gpu is not None:
        fields["achieved"] = f"{query.achieved_flops_per_gpu / 1e12:,.4g} TFLOP/s"
    return fields


def _rows(query: ComputeQuery, r: dict[str, Any], *names: str) -> list[str]:
    """The page's formula rows named `names`, each as its symbolic then substituted LaTeX."""
    rows = {what: (symbolic, substituted) for what, symbolic, substituted, _ in
            compute_formulas(query, r)}  # fmt: skip
    return [latex for name in names for latex in rows[name]]


def training_flops(inputs: Mapping[str, float]) -> Solution:
    """FLOPs the hardware executes for D tokens: 6ND, 8ND with full recompute, 2ND inference."""
    query = _query(inputs)
    r = compute_result(query)
    return Solution(
        answer=r["total_flops"],
        prompt_fields=_fields(query, r),
        steps_latex=_rows(query, r, "FLOPs per token", "Total FLOPs"),
    )


def training_days(inputs: Mapping[str, float]) -> Solution:
    """Wall-clock days: executed FLOPs / (GPUs x dense peak x utilization)."""
    query = _query(inputs)
    r = compute_result(query)
    return Solution(
        answer=r["time_days"],
        prompt_fields=_fields(query, r),
        steps_latex=_rows(query, r, "FLOPs per token", "Total FLOPs", "Time"),
    )


def gpu_hours(inputs: Mapping[str, float]) -> Solution:
    """GPU-hours: GPUs x wall-clock hours."""
    query = _query(inputs)
    r = compute_result(query)
    return Solution(
        answer=r["gpu_hours"],
        prompt_fields=_fields(query, r),
        steps_latex=_rows(query, r, "FLOPs per token", "Total FLOPs", "Time", "GPU-hours and cost"),
    )


def mfu_percent(inputs: Mapping[str, float]) -> Solution:
    """MFU from a measured throughput: tokens/s x 6N / (GPUs x dense peak), in percent."""
    query = _query(inputs)
    r = compute_result(query)
    return Solution(
        answer=100 * r["measured"]["mfu"],
        prompt_fields=_fields(query, r),
        steps_latex=_rows(query, r, "MFU from a measurement"),
    )


def hfu_percent(inputs: Mapping[str, float]) -> Solution:
    """HFU from a measured throughput: tokens/s x executed FLOPs per token / (GPUs x peak)."""
    query = _query(inputs)
    r = compute_result(query)
    measured, peak = r["measured"], latex_number(r["peak_flops_per_gpu"])
    per_second, peak_word = gettext("tokens/s"), gettext("peak")
    return Solution(
        answer=100 * measured["hfu"],
        prompt_fields=_fields(query, r),
        steps_latex=[
            *_rows(query, r, "FLOPs per token"),
            rf"\text{{HFU}} = \frac{{\text{{{per_second}}} \cdot C_\text{{executed}}}}"
            rf"{{n \cdot \text{{{peak_word}}}}}",
            rf"\frac{{{latex_number(measured['tokens_per_s'])} \cdot "
            rf"{latex_number(r['flops_per_token'])}}}{{{query.gpus} \cdot {peak}}}"
            rf" = {measured['hfu']:.4g}",
        ],
    )


def achieved_utilization(inputs: Mapping[str, float]) -> Solution:
    """Share of the dense peak a reported FLOP/s per GPU is, in percent."""
    query = _query(inputs)
    r = compute_result(query)
    return Solution(
        answer=100 * r["achieved"]["utilization"],
        prompt_fields=_fields(query, r),
        steps_latex=_rows(query, r, "From an achieved FLOP/s per GPU"),
    )


def achieved_days(inputs: Mapping[str, float]) -> Solution:
    """Days to execute the run's FLOPs at GPUs x the reported FLOP/s per GPU."""
    query = _query(inputs)
    r = compute_result(query)
    return Solution(
        answer=r["achieved"]["time_days"],
        prompt_fields=_fields(query, r),
        steps_latex=_rows(
            query, r, "FLOPs per token", "Total FLOPs", "From an achieved FLOP/s per GPU"
        ),  # fmt: skip
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "compute.training_flops": training_flops,
    "compute.training_days": training_days,
    "compute.gpu_hours": gpu_hours,
    "compute.mfu_percent": mfu_percent,
    "compute.hfu_percent": hfu_percent,
    "compute.achieved_utilization": achieved_utilization,
    "compute.achieved_days": achieved_days,
}
