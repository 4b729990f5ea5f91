"""The activation-checkpointing demo's page: saved bytes and the backward peak per mode.

The figures come from app.calc.activations (saved at the end of forward) and
app.calc.checkpointing (the peak during backward, recompute included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.calc.activations import mlp_stack_saved_bytes
from app.calc.checkpointing import BackwardPeak, mlp_stack_backward_peak
from app.calc.flops import PASSES
from app.formatting import latex_int
from app.i18n import N_
from app.live.demo_page import DemoPage
from app.live.verdict import Check, check
from demos.specs.activation_checkpointing import ActivationCheckpointingParams

FP32_BYTES = 4  # the demo trains in fp32


@dataclass(frozen=True)
class ModePrediction:
    mode: str
    segment_layers: int | None
    saved_bytes: int
    peak: BackwardPeak
    passes: int  # forward passes' worth of compute per step (app.calc.flops.PASSES)


@dataclass(frozen=True)
class CheckpointingPrediction:
    params: ActivationCheckpointingParams
    world_size: int

    def saved_bytes(self, segment_layers: int | None) -> int:
        p = self.params
        return mlp_stack_saved_bytes(
            p.layers, p.tokens, p.width, p.hidden_width, FP32_BYTES, segment_layers
        )

    def peak(self, segment_layers: int | None) -> BackwardPeak:
        p = self.params
        return mlp_stack_backward_peak(
            p.layers, p.tokens, p.width, p.hidden_width, FP32_BYTES, segment_layers
        )

    @property
    def modes(self) -> list[ModePrediction]:
        return [
            ModePrediction(
                mode,
                segment,
                self.saved_bytes(segment),
                self.peak(segment),
                PASSES["training" if segment is None else "training_recompute"],
            )
            for mode, segment in self.params.modes
        ]

    def of(self, mode: str) -> ModePrediction:
        return next(m for m in self.modes if m.mode == mode)

    @property
    def compute_ratio(self) -> float:
        """Recompute reruns every block's forward once: 4 passes of work instead of 3."""
        return PASSES["training_recompute"] / PASSES["training"]

    @property
    def formula_none_latex(self) -> str:
        p = self.params
        return (
            rf"L\,T\,(d + 2\cdot 4d)\,b = {p.layers} \times {p.tokens} \times "
            rf"({p.width} + 2 \times {p.hidden_width}) \times {FP32_BYTES}"
            rf" = {latex_int(self.saved_bytes(None))}\ \text{{B}}"
        )

    def formula_segments_latex(self, segment_layers: int) -> str:
        p = self.params
        segments = -(-p.layers // segment_layers)
        return (
            rf"\lceil L/k \rceil\,T\,d\,b = \lceil {p.layers}/{segment_layers} \rceil \times "
            rf"{p.tokens} \times {p.width} \times {FP32_BYTES} = {segments} \times "
            rf"{latex_int(p.tokens * p.width * FP32_BYTES)}"
            rf" = {latex_int(self.saved_bytes(segment_layers))}\ \text{{B}}"
        )

    def formula_peak_latex(self, segment_layers: int | None) -> str:
        """The peak's terms, as app.calc.checkpointing derives them: kept, rebuilt, gradients."""
        peak = self.peak(segment_layers)
        if segment_layers is None:
            kept = r"L\,T\,(d + 2\cdot 4d)\,b"
            values = latex_int(peak.kept)
        else:
            blocks = peak.last_block - peak.first_block + 1
            kept = rf"\underbrace{{{peak.segment}\,T\,d\,b}}_{{j = {peak.segment}}} + "
            kept += rf"\underbrace{{({blocks}\,T\,(d + 2\cdot 4d) - T\,d)\,b}}_{{n_j = {blocks}}}"
            values = rf"{latex_int(peak.kept)} + {latex_int(peak.recomputed)}"
        return (
            rf"{kept} + T\,(d + 4d)\,b + 2b = {values} + {latex_int(peak.gradients)}"
            rf" + {peak.loss} = {latex_int(peak.total)}\ \text{{B}}"
        )


def chart_points(event: dict[str, Any], prediction: CheckpointingPrediction) -> dict[str, Any]:
    first = event["ranks"][0]
    return {
        "iteration": event["iteration"],
        "mode": first["mode"],
        "modes": [m.mode for m in prediction.modes],
        "predicted_bytes": prediction.of(first["mode"]).saved_bytes,
        "saved_bytes": first["saved_bytes"],
        "time_s": max(r["time_s"] for r in event["ranks"]),
    }


GRADIENTS = {True: N_("equal, bit for bit"), False: N_("differ")}
TIMING = N_(
    "the prediction counts compute only; a small CPU job's times also carry the checkpoint's "
    "bookkeeping and the other ranks sharing the cores, and scatter widely"
)
MODE_NAMES = {"none": N_("no recompute")}


def verdict(
    summary: dict[str, Any], prediction: CheckpointingPrediction, backend: str | None
) -> list[Check]:
    """Per mode: bytes saved for backward and the backward peak, exact; recompute's cost in
    time beside the compute it adds; the gradients over every mode."""
    checks, times = [], []
    for m in summary["modes"]:
        p, scope = prediction.of(m["mode"]), MODE_NAMES.get(m["mode"], m["mode"])
        checks.append(
            check(N_("Saved for backward, per rank"), m["saved_bytes"], p.saved_bytes,
                  scope=scope, agrees=m["same_on_every_rank"] and m["saved_bytes"] == p.saved_bytes)
        )  # fmt: skip
        if m.get("peak_bytes") is not None:
            agrees = (
                m["peak_same_on_every_rank"]
                and m["peak_bytes"] == p.peak.total
                and m["peak_segment"] == p.peak.segment
            )
            checks.append(check(N_("Backward peak, per rank"), m["peak_bytes"], p.peak.total,
                                scope=scope, agrees=agrees))  # fmt: skip
        if m["segment_layers"] and m.get("time_vs_none"):
            times.append(check(N_("Step time vs no recompute"), m["time_vs_none"],
                               prediction.compute_ratio, unit="ratio", scope=scope,
                               reason=TIMING, explained=True))  # fmt: skip
    equal = all(m["gradients_equal"] for m in summary["modes"])
    gradients = check(N_("Gradients vs no recompute"), GRADIENTS[equal], GRADIENTS[True],
                      unit="text", scope=N_("every mode"))  # fmt: skip
    return checks + times + [gradients]


PAGE = DemoPage(
    demo="activation_checkpointing",
    slug="activation-checkpointing",
    title=N_("Activation checkpointing on real ranks"),
    teaches=N_(
        "Train a residual MLP stack with and without recompute: saved activation bytes "
        "fall to the segment inputs, step time rises by about one forward pass."
    ),
    cards=("activation-checkpointing", "memory-anatomy"),
    params=ActivationCheckpointingParams,
    labels={
        "layers": N_("Blocks"),
        "width": N_("Width"),
        "tokens": N_("Tokens"),
        "segment_layers": N_("Blocks per segment"),
        "steps": N_("Steps per mode"),
    },
    predict=CheckpointingPrediction,
    verdict=verdict,
    passes=N_(
        "saved bytes from a counted forward (saved-tensor hooks on) and the backward peak "
        "from a traced step (every op watched), both untimed; time from a clean forward and "
        "backward before them, no probe on."
    ),
    chart_data=chart_points,
    scripts=("js/demo-activation-checkpointing.js",),
)
