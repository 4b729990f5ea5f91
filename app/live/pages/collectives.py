"""The collectives demo's page: ring bytes, gloo's bytes and nccl-tests' bandwidths (app.calc)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from app.calc.bandwidth import busbw_bytes_per_s, slowest_rank_median_s
from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor
from app.calc.gloo import gloo_bytes_per_rank
from app.formatting import latex_fraction
from app.live.demo_page import DemoPage
from demos.specs.collectives import KINDS, CollectivesParams

KIND_NAMES = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "broadcast": "broadcast",
    "all_to_all": "all-to-all",
}
# What S is for each kind (nccl-tests doc/PERFORMANCE.md).
SIZE_MEANING = {
    "all_reduce": "the buffer",
    "reduce_scatter": "the whole input",
    "all_gather": "the whole output",
    "broadcast": "the buffer",
    "all_to_all": "one rank's buffer",
}
FACTOR_LATEX = {
    "all_reduce": r"\tfrac{2(N-1)}{N}",
    "reduce_scatter": r"\tfrac{N-1}{N}",
    "all_gather": r"\tfrac{N-1}{N}",
    "broadcast": "1",
    "all_to_all": r"\tfrac{N-1}{N}",
}


def header_allowance_bytes(payload_bytes: int, ranks: int) -> float:
    """How far gloo's wire bytes may exceed its algorithm's: message headers, measured at 48 to
    576 B per collective at 2 ranks and up to 3,456 B for 16 MiB at 4 ranks (0.02 %)."""
    return 1024 * ranks + payload_bytes / 1000


@dataclass(frozen=True)
class CollectivesPrediction:
    params: CollectivesParams
    world_size: int

    kinds = KINDS

    @property
    def sizes(self) -> list[int]:
        return self.params.payload_bytes(self.world_size)

    @staticmethod
    def name(kind: str) -> str:
        return KIND_NAMES[kind]

    @staticmethod
    def size_meaning(kind: str) -> str:
        return SIZE_MEANING[kind]

    def factor(self, kind: str) -> Fraction:
        return ring_factor(Collective(kind), self.world_size)

    def logical_bytes(self, kind: str, payload_bytes: int) -> float:
        return ring_bytes_per_rank(Collective(kind), payload_bytes, self.world_size)

    def wire_bytes(self, kind: str, payload_bytes: int) -> list[float]:
        """What gloo's algorithm writes on each rank (app.calc.gloo)."""
        return [
            gloo_bytes_per_rank(Collective(kind), payload_bytes, self.world_size, rank)
            for rank in range(self.world_size)
        ]

    def wire_agrees(self, kind: str, payload_bytes: int, measured: list[float]) -> bool:
        predicted = self.wire_bytes(kind, payload_bytes)
        slack = header_allowance_bytes(payload_bytes, self.world_size)
        return all(p <= m <= p + slack for p, m in zip(predicted, measured, strict=True))

    def logical_agrees(self, kind: str, payload_bytes: int, measured: list[float]) -> bool:
        return all(m == self.logical_bytes(kind, payload_bytes) for m in measured)

    @staticmethod
    def time_s(event: dict[str, Any]) -> float:
        return slowest_rank_median_s([row["times_s"] for row in event["ranks"]])

    def busbw_gbps(self, kind: str, payload_bytes: int, time_s: float) -> float:
        return busbw_bytes_per_s(Collective(kind), payload_bytes, self.world_size, time_s) / 1e9

    def factor_latex(self, kind: str) -> str:
        n = self.world_size
        general = FACTOR_LATEX[kind]
        own = general.replace("N", str(n))
        factor = latex_fraction(self.factor(kind), r"\tfrac")
        return (
            rf"\text{{busbw}} = \frac{{S}}{{t}} \times {general}"
            rf" = \frac{{S}}{{t}} \times {own} = \frac{{S}}{{t}} \times {factor}"
        )


def chart_points(event: dict[str, Any], prediction: CollectivesPrediction) -> dict[str, Any]:
    first = event["ranks"][0]
    kind, payload = first["kind"], first["payload_bytes"]
    return {
        "kind": KIND_NAMES[kind],
        "kinds": [KIND_NAMES[k] for k in KINDS],
        "sizes": prediction.sizes,
        "payload_bytes": payload,
        "busbw_gbps": prediction.busbw_gbps(kind, payload, prediction.time_s(event)),
    }


PAGE = DemoPage(
    demo="collectives",
    slug="collectives",
    title="Collectives on real ranks: bytes and bus bandwidth",
    teaches="Sweep buffer sizes through all-reduce, reduce-scatter, all-gather, broadcast and "
    "all-to-all; see nccl-tests' bus bandwidth and where gloo sends more than the ring.",
    cards=("ring-all-reduce", "comm-volume-per-layer"),
    params=CollectivesParams,
    labels={
        "max_size_mib": "Largest buffer (MiB)",
        "sizes": "Sizes",
        "iterations": "Runs per size",
    },
    predict=CollectivesPrediction,
    chart_data=chart_points,
    scripts=("/static/js/demo-collectives.js",),
    passes="bytes (logical and wire) from a counted run of each collective, probes on; time from "
    "a second, clean run, no probe (median of the iterations' clean runs, slowest rank).",
)
