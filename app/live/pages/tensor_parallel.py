"""The tensor-parallel demo's page: each split's collectives per pass, predicted by app.calc."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.calc.messages import Message
from app.calc.tensor_parallel import (
    PASSES,
    TPCollective,
    TPLayout,
    tp_block_collectives,
    tp_pass_bytes_per_rank,
)
from app.formatting import bytes_human, latex_int
from app.i18n import N_, gettext
from app.live.demo_page import DemoPage
from app.live.verdict import Check, check, gloo_header_allowance_bytes, wire_check
from demos.specs.tensor_parallel import TensorParallelParams

LAYOUT_NAMES = {
    "mlp_column_row": N_("MLP, column then row"),
    "mlp_row_column": N_("MLP, row then column"),
    "attention_heads": N_("Attention, split by heads"),
}
# What app.calc.tensor_parallel writes for the page (app.calc stays free of i18n): each pass and
# each collective's role, marked here and translated where the page shows them.
SHOWN_BY_THE_CALCULATOR = (
    N_("forward"),
    N_("backward"),
    N_("sum the partial X·A before the GeLU"),
    N_("gather the column slices of Y"),
    N_("sum the partial dZ = dY·Bᵀ"),
    N_("gather the column slices of dX"),
    N_("g: sum the partial outputs"),
    N_("f: sum the partial dX"),
)


def _latex_bytes(n_bytes: float) -> str:
    return latex_int(n_bytes) + r"\,\text{B}"


@dataclass(frozen=True)
class TensorParallelPrediction:
    params: TensorParallelParams
    world_size: int

    @property
    def problem(self) -> Message | None:
        """Why the worker will refuse these shapes, shown before the run starts (|say)."""
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
        size = bytes_human(collective["payload_bytes"])
        return gettext("%(count)s × %(kind)s of %(size)s") % {
            "count": collective["count"],
            "kind": kind,
            "size": size,
        }

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


RESULT = {True: N_("as on one rank"), False: N_("not as on one rank")}


def verdict(
    summary: dict[str, Any], prediction: TensorParallelPrediction, backend: str | None
) -> list[Check]:
    """Per split: bytes per step (forward and backward), logical and on the wire, and the
    result (output, dX and the weight-gradient shards) against the block computed whole on one
    rank."""
    logical, wire, results = [], [], []
    for item in summary["layouts"]:
        layout, passes = item["layout"], item["passes"]
        scope = prediction.layout_name(layout)
        predicted = prediction.step_bytes(layout)
        logical_bytes = sum(m["logical_bytes_per_rank"] for m in passes.values())
        wire_bytes = sum(m["wire_bytes_per_rank"] for m in passes.values())
        # The same collectives as predicted, on every rank and step: the same bytes is not enough.
        agrees = all(
            m["same_on_every_rank_and_step"] and prediction.matches(layout, pass_, m["collectives"])
            for pass_, m in passes.items()
        )
        allowance = sum(
            gloo_header_allowance_bytes(c["payload_bytes"], prediction.world_size) * c["count"]
            for m in passes.values()
            for c in m["collectives"]
        )
        logical.append(check(N_("Logical bytes per step"), logical_bytes, predicted,
                             scope=scope, agrees=agrees))  # fmt: skip
        wire.append(wire_check(N_("Wire bytes per step"), wire_bytes, predicted,
                               allowance, backend, scope))  # fmt: skip
        results.append(check(N_("Output, dX, weight grads"), RESULT[item["correct"]],
                             RESULT[True], unit="text", scope=scope))  # fmt: skip
    # Rows of one quantity together, so the wire rows' shared reason is written once.
    return logical + wire + results


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
    title=N_("Tensor-parallel split rules on real ranks"),
    teaches=N_(
        "Split an MLP column-then-row or row-then-column, and attention by heads; count "
        "every collective per pass and check the result against one rank."
    ),
    cards=("tensor-parallel", "comm-volume-per-layer"),
    params=TensorParallelParams,
    labels={
        "layout": N_("Split"),
        "hidden": N_("Hidden size h"),
        "ffn_multiple": N_("MLP width (× h)"),
        "batch": N_("Batch"),
        "seq_len": N_("Sequence length"),
        "heads": N_("Heads"),
        "iterations": N_("Steps per split"),
    },
    predict=TensorParallelPrediction,
    verdict=verdict,
    chart_data=chart_points,
    scripts=("js/demo-tensor-parallel.js",),
    passes=N_(
        "bytes (logical and wire) from a counted forward and backward of the split block, "
        "probes on; time from the same forward and backward run again clean, no probe (the "
        "summary: median of the steps' clean runs, slowest rank)."
    ),
)
