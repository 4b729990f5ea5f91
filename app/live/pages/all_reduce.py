"""The all-reduce demo's page: its prediction from the ring formula, and its chart's points."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor
from app.formatting import bytes_human, latex_fraction
from app.i18n import N_
from app.live.demo_page import DemoPage
from app.live.verdict import Check, check, gloo_header_allowance_bytes, wire_check
from demos.specs.all_reduce import AllReduceParams


@dataclass(frozen=True)
class AllReducePrediction:
    params: AllReduceParams
    world_size: int

    @property
    def payload_bytes(self) -> int:
        return self.params.payload_bytes

    @property
    def bytes_per_rank(self) -> float:
        return ring_bytes_per_rank(Collective.ALL_REDUCE, self.payload_bytes, self.world_size)

    def wire_percent_off(self, wire_bytes: float) -> float:
        """How far the bytes the backend wrote are from the ring prediction, in percent."""
        if self.bytes_per_rank == 0:
            return 0.0
        return 100 * (wire_bytes - self.bytes_per_rank) / self.bytes_per_rank

    @property
    def formula_latex(self) -> str:
        n = self.world_size
        factor = ring_factor(Collective.ALL_REDUCE, n)
        return (
            rf"\text{{sent per rank}} = \frac{{2(N-1)}}{{N}}\,S"
            rf" = \frac{{2({n}-1)}}{{{n}}} \times {_latex_bytes(self.payload_bytes)}"
            rf" = {latex_fraction(factor)} \times {_latex_bytes(self.payload_bytes)}"
            rf" = {_latex_bytes(self.bytes_per_rank)}"
        )


def _latex_bytes(n_bytes: float) -> str:
    value, unit = bytes_human(n_bytes).split(" ")
    return rf"{value.replace(',', '{,}')}\,\text{{{unit}}}"


def chart_points(event: dict[str, Any], prediction: AllReducePrediction) -> dict[str, Any]:
    return {
        "iteration": event["iteration"],
        "predicted_bytes": prediction.bytes_per_rank,
        "ranks": [
            {k: r[k] for k in ("rank", "time_s", "logical_bytes", "wire_bytes")}
            for r in event["ranks"]
        ],
    }


RESULT = {True: N_("the sum, on every rank"), False: N_("wrong on some rank")}


def verdict(
    summary: dict[str, Any], prediction: AllReducePrediction, backend: str | None
) -> list[Check]:
    """Bytes per rank, logical and on the wire, and the result; times have no prediction."""
    predicted = prediction.bytes_per_rank
    allowance = gloo_header_allowance_bytes(summary["payload_bytes"], summary["world_size"])
    return [
        check(N_("Logical bytes sent per rank"), summary["logical_bytes_per_rank"], predicted),
        wire_check(
            N_("Wire bytes written per rank (mean)"),
            statistics.fmean(summary["wire_bytes_per_rank"]),
            predicted,
            allowance,
            backend,
        ),
        check(N_("All-reduced values"), RESULT[summary["correct"]], RESULT[True], unit="text"),
    ]


PAGE = DemoPage(
    demo="all_reduce",
    slug="all-reduce",
    title=N_("All-reduce on real ranks"),
    teaches=N_(
        "Choose a buffer size; watch every rank's time and bytes, beside ring "
        "all-reduce's 2(N−1)/N."
    ),
    cards=("ring-all-reduce", "dp-vs-ddp"),
    params=AllReduceParams,
    labels={"size_mib": N_("Buffer size (MiB)"), "iterations": N_("Iterations")},
    predict=AllReducePrediction,
    verdict=verdict,
    chart_data=chart_points,
    scripts=("js/demo-chart.js",),
    passes=N_(
        "bytes (logical and wire) from a counted all-reduce, probes on; time from a second, "
        "clean all-reduce of the same buffer, no probe (the summary: median of the "
        "iterations' clean runs, slowest rank)."
    ),
)
