"""What the all-reduce demo page shows beside the measurements: the calculator's prediction."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor
from app.formatting import bytes_human
from demos.specs import AllReduceParams


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

    @property
    def formula_latex(self) -> str:
        n = self.world_size
        factor = ring_factor(Collective.ALL_REDUCE, n)
        return (
            rf"\text{{sent per rank}} = \frac{{2(N-1)}}{{N}}\,S"
            rf" = \frac{{2({n}-1)}}{{{n}}} \times {_latex_bytes(self.payload_bytes)}"
            rf" = {_latex_fraction(factor)} \times {_latex_bytes(self.payload_bytes)}"
            rf" = {_latex_bytes(self.bytes_per_rank)}"
        )


def _latex_fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return rf"\frac{{{value.numerator}}}{{{value.denominator}}}"


def _latex_bytes(n_bytes: float) -> str:
    value, unit = bytes_human(n_bytes).split(" ")
    return rf"{value.replace(',', '{,}')}\,\text{{{unit}}}"


def wire_vs_prediction_percent(wire_bytes: float, predicted_bytes: float) -> float:
    """How far the bytes the backend wrote are from the ring prediction, in percent."""
    if predicted_bytes == 0:
        return 0.0
    return 100 * (wire_bytes - predicted_bytes) / predicted_bytes
