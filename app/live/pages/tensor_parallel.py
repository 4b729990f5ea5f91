"""The tensor-parallel demo's page: each split's collectives per pass, predicted by app.calc."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.calc.tensor_parallel import (
    PASSES,
    TPCollective,
    TPLayout,
    tp_block_collectives,
    tp_pass_bytes_per_rank,
)
from app.formatting import bytes_human, latex_int
from app.live.demo_page import DemoPage
from demos.specs.tensor_parallel import TensorParallelParams

LAYOUT_NAMES = {
    "mlp_column_row": "MLP, column then row",
    "mlp_row_column": "MLP, row then column",
    "attention_heads": "Attention, split by heads",
}


def _latex_bytes(n_bytes: float) -> str:
    return latex_int(n_bytes) + r"\,\text{B}"


@dataclass(frozen=True)
class TensorParallelPrediction:
    params: TensorParallelParams
    world_size: int

    @property
    def problem(self) -> str | None:
        """Why the worker will refuse these shapes, shown before the run starts."""
        return self.params.problem_with(self.world_size)

    def collectives(self, layout: str) -> tuple[TPCollective, ...]:
        p = self.params
        return tp_block_collectives(
            TPLayout(layout), p.tokens, p.hidden, p.ffn_hidden, p.dtype_bytes
        )

    def pass_bytes(self, layout: str, pass_: str) -> float:
        return tp_pass_bytes_per_rank(self.collectives(layout), pass_, self.world_size)

    def step_bytes(self, layout: str) -> float:
        return sum(self.pass_bytes(layout, pass_) for pass_ in PASSES)

    def by_kind(self, layout: str, pass_: str) -> list[dict[str, Any]]:
        """The prediction in the shape the probe reports a pass: one entry per collective."""
        return [
            {
                "kind": c.kind.value,
                "count": 1,
                "payload_bytes": c.payload_bytes,
                "logical_bytes": c.bytes_per_rank(self.world_size),
            }
            for c in self.collectives(layout)
            if c.pass_ == pass_
        ]

    def matches(self, layout: str, pass_: str, measured: list[dict[str, Any]]) -> bool:
        return measured == self.by_kind(layout, pass_)

    @staticmethod
    def describe(collective: dict[str, Any]) -> str:
        """'1 × all-reduce of 4 KiB' for a probe's or the prediction's entry."""
        kind = collective["kind"].replace("_", "-")
        return f"{collective['count']} × {kind} of {bytes_human(collective['payload_bytes'])}"

    @staticmethod
    def layout_name(layout: str) -> str:
        return LAYOUT_NAMES[layout]

    def formula_latex(self, layout: str) -> str:
        p, n = self.params, self.world_size
        narrow = p.tokens * p.hidden * p.dtype_bytes
        ar = rf"\tfrac{{2({n}-1)}}{{{n}}}"
        ag = rf"\tfrac{{{n}-1}}{{{n}}}"
        if layout == "mlp_row_column":
            wide = p.tokens * p.ffn_hidden * p.dtype_bytes
            return (
                rf"\text{{per pass}} = {ar}\,(b s \cdot {p.ffn_multiple}h \cdot 4)"
                rf" + {ag}\,(b s \cdot h \cdot 4) = {ar} \times {_latex_bytes(wide)}"
                rf" + {ag} \times {_latex_bytes(narrow)}"
                rf" = {_latex_bytes(self.pass_bytes(layout, 'forward'))}"
            )
        return (
            rf"\text{{per pass}} = {ar}\,(b s \cdot h \cdot 4)"
            rf" = {ar} \times ({p.batch} \cdot {p.seq_len} \cdot {p.hidden} \cdot 4\,\text{{B}})"
            rf" = {_latex_bytes(self.pass_bytes(layout, 'forward'))}"
        )


def chart_points(event: dict[str, Any], prediction: TensorParallelPrediction) -> dict[str, Any]:
    layout = event["ranks"][0]["layout"]
    return {
        "iteration": event["iteration"],
        "layout": LAYOUT_NAMES[layout],
        "predicted_bytes": prediction.step_bytes(layout),
        "ranks": [
            {
                "rank": r["rank"],
                "logical_bytes": r["forward"]["logical_bytes"] + r["backward"]["logical_bytes"],
                "wire_bytes": r["forward"]["wire_bytes"] + r["backward"]["wire_bytes"],
            }
            for r in event["ranks"]
        ],
    }


PAGE = DemoPage(
    demo="tensor_parallel",
    slug="tensor-parallel",
    title="Tensor-parallel split rules on real ranks",
    teaches="Split an MLP column-then-row or row-then-column, and attention by heads; count "
    "every collective per pass and check the result against one rank.",
    cards=("tensor-parallel", "comm-volume-per-layer"),
    params=TensorParallelParams,
    labels={
        "layout": "Split",
        "hidden": "Hidden size h",
        "ffn_multiple": "MLP width (× h)",
        "batch": "Batch",
        "seq_len": "Sequence length",
        "heads": "Heads",
        "iterations": "Steps per split",
    },
    predict=TensorParallelPrediction,
    chart_data=chart_points,
    scripts=("/static/js/demo-tensor-parallel.js",),
    passes="bytes (logical and wire) from a counted forward and backward of the split block, "
    "probes on; time from the same forward and backward run again clean, no probe (the "
    "summary: median of the steps' clean runs, slowest rank).",
)
