"""The mixed-precision demo's page: every threshold and share from app.calc.precision."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from app.calc.comm import Collective, ring_bytes_per_rank
from app.calc.float_formats import (
    FLOAT_FORMATS,
    FP16,
    FP32,
    FloatFormat,
    fraction_flushed_to_zero,
    fraction_overflowing,
    round_to_format,
)
from app.i18n import N_
from app.live.demo_page import DemoPage
from app.live.verdict import Check, check
from demos.specs.mixed_precision import RANGE_PROBES, MixedPrecisionParams

# (case, dtype, loss-scaled?) in the order demos/mixed_precision.py runs them
CASES = (
    ("fp32", "fp32", False),
    ("fp16", "fp16", False),
    ("fp16 + loss scale", "fp16", True),
    ("bf16", "bf16", False),
)


@dataclass(frozen=True)
class CasePrediction:
    case: str
    fmt: FloatFormat
    scale_exponent: int  # 0: no loss scaling
    zero_fraction: float
    inf_fraction: float
    relative_error_bound: float  # for results in the normal range
    payload_bytes: int
    logical_bytes: float

    @property
    def step_skipped(self) -> bool:
        return self.inf_fraction > 0


@dataclass(frozen=True)
class MixedPrecisionPrediction:
    params: MixedPrecisionParams
    world_size: int

    def _case(self, case: str, dtype: str, scaled: bool) -> CasePrediction:
        p = self.params
        fmt = FLOAT_FORMATS[dtype]
        s = p.loss_scale_exponent if scaled else 0
        low, high = p.low_log2 + s, p.high_log2 + s
        payload = p.gradients * fmt.bytes_
        return CasePrediction(
            case=case,
            fmt=fmt,
            scale_exponent=s,
            zero_fraction=fraction_flushed_to_zero(low, high, fmt),
            inf_fraction=self._inf_fraction(fmt, s),
            relative_error_bound=fmt.unit_roundoff,
            payload_bytes=payload,
            logical_bytes=ring_bytes_per_rank(Collective.ALL_REDUCE, payload, self.world_size),
        )

    def _inf_fraction(self, fmt: FloatFormat, s: int) -> float:
        """Backward's first 16-bit gradient is 2^(s-k) for every element: if that overflows,
        all do. Otherwise the all-reduce sums N copies, which may overflow at the top."""
        p = self.params
        upstream_log2 = s - p.loss_weight_exponent
        if upstream_log2 >= math.log2(fmt.overflow_threshold):
            return 1.0
        shift = math.log2(self.world_size)
        return fraction_overflowing(p.low_log2 + s + shift, p.high_log2 + s + shift, fmt)

    @property
    def cases(self) -> list[CasePrediction]:
        return [self._case(*case) for case in CASES]

    def of(self, case: str) -> CasePrediction:
        return next(c for c in self.cases if c.case == case)

    @property
    def fp16_line_log2(self) -> int:
        return FP16.underflow_log2

    @property
    def formula_latex(self) -> str:
        p = self.params
        k, spread, line = p.loss_weight_exponent, p.spread_exponent, FP16.underflow_log2
        share = fraction_flushed_to_zero(p.low_log2, p.high_log2, FP16)
        return (
            rf"|g| \in [2^{{-{k}-{spread}}}, 2^{{-{k}}}],\quad "
            rf"\Pr\left(|g| \le 2^{{{line}}}\right) = "
            rf"\frac{{{line} - ({p.low_log2})}}{{{spread}}} = {share:.4f}"
            if 0 < share < 1
            else rf"|g| \in [2^{{{p.low_log2}}}, 2^{{{p.high_log2}}}],\quad "
            rf"\Pr\left(|g| \le 2^{{{line}}}\right) = {share:g}"
        )

    def range_prediction(self, name: str) -> list[str]:
        """Each probe as the worker writes its cast (Python's repr): fp32 first, then `name`."""
        fmt = FLOAT_FORMATS[name]
        return [repr(round_to_format(round_to_format(v, FP32), fmt)) for v in RANGE_PROBES]

    def formats(self) -> list[FloatFormat]:
        return [FLOAT_FORMATS["fp16"], FLOAT_FORMATS["bf16"]]


SAMPLED = N_(
    "n evenly spaced inputs, each rounded to the 16-bit format first: the line moves by one "
    "input and by those within half a 16-bit step of it"
)
NONE_SKIPPED = N_("none")
SUMMED = {True: N_("the sum, on every rank, in every case"), False: N_("wrong on some rank")}
# torch.finfo's figures beside the IEEE formats' (the worker's names, then app.calc's)
LIMITS = (
    ("max", "max_finite"),
    ("smallest_normal", "smallest_normal"),
    ("smallest_subnormal", "smallest_subnormal"),
    ("eps", "machine_epsilon"),
)


def _sampling_band(case: CasePrediction, params: MixedPrecisionParams) -> float:
    """How far a measured share may sit from the continuous one: the n inputs are grid points
    (one point, 1/n), and each is rounded to the 16-bit format before the product, so inputs
    within half a step of the line (relative unit roundoff u) may cross it: log2(1 + u) of the
    spread's octaves. 65,536 gradients at spread 14 in fp16: 3.3 inputs beside the one point.
    """
    return 1 / params.gradients + math.log2(1 + case.fmt.unit_roundoff) / params.spread_exponent


def verdict(
    summary: dict[str, Any], prediction: MixedPrecisionPrediction, backend: str | None
) -> list[Check]:
    """Per case the share of gradients flushed to zero; which steps were skipped; the bytes
    all-reduced per dtype; and fp16's and bf16's casts and limits against IEEE 754."""
    cases = summary["cases"]
    checks = [
        check(N_("Gradients flushed to zero"), c["zero_fraction"], p.zero_fraction,
              unit="share", scope=c["case"], reason=SAMPLED,
              explained=abs(c["zero_fraction"] - p.zero_fraction)
              <= _sampling_band(p, prediction.params))
        for c, p in ((c, prediction.of(c["case"])) for c in cases)
    ]  # fmt: skip
    skipped = [c["case"] for c in cases if c["step_skipped"]]
    predicted_skipped = [c["case"] for c in cases if prediction.of(c["case"]).step_skipped]
    checks.append(
        check(N_("Steps skipped (an infinity found)"), ", ".join(skipped) or NONE_SKIPPED,
              ", ".join(predicted_skipped) or NONE_SKIPPED, unit="text")
    )  # fmt: skip
    for dtype in dict.fromkeys(c["dtype"] for c in cases):
        same = [c for c in cases if c["dtype"] == dtype]
        predicted = prediction.of(same[0]["case"]).payload_bytes
        worst = max((c["payload_bytes"] for c in same), key=lambda b: abs(b - predicted))
        checks.append(check(N_("All-reduce payload per rank"), worst, predicted, scope=dtype))
    # runs recorded before the summary kept it have no all_reduce_correct
    summed = all(c.get("all_reduce_correct", True) for c in cases)
    checks.append(check(N_("All-reduced gradients"), SUMMED[summed], SUMMED[True], unit="text"))
    for fmt in prediction.formats():
        measured = summary["range"]["formats"][fmt.name]
        casts = sum(
            got == want
            for got, want in zip(measured["casts"], prediction.range_prediction(fmt.name),
                                 strict=True)
        )  # fmt: skip
        limits = sum(measured[got] == getattr(fmt, want) for got, want in LIMITS)
        checks += [
            check(N_("Casts rounded as IEEE 754 rounds (of the probes)"), casts,
                  len(summary["range"]["probes"]), unit="count", scope=fmt.name),
            check(N_("IEEE 754 limits matched (max, normal, subnormal, ε)"),
                  limits, len(LIMITS), unit="count", scope=fmt.name),
        ]  # fmt: skip
    return checks


def chart_points(event: dict[str, Any], prediction: MixedPrecisionPrediction) -> dict[str, Any]:
    first = event["ranks"][0]
    if first["case"] == "range":
        return {"iteration": event["iteration"], "case": "range"}
    return {
        "iteration": event["iteration"],
        "case": first["case"],
        "zero_fraction": first["zero_fraction"],
        "predicted_zero_fraction": prediction.of(first["case"]).zero_fraction,
    }


PAGE = DemoPage(
    demo="mixed_precision",
    slug="mixed-precision",
    title=N_("Mixed precision on real tensors"),
    teaches=N_(
        "Watch small fp16 gradients flush to zero, loss scaling bring them back, and "
        "fp16's 65504 ceiling beside bf16's range and coarser steps."
    ),
    cards=("mixed-precision",),
    params=MixedPrecisionParams,
    labels={
        "gradients": N_("Gradient elements"),
        "loss_weight_exponent": N_("Loss weight exponent k"),
        "spread_exponent": N_("Input spread"),
        "loss_scale_exponent": N_("Loss scale exponent s"),
    },
    predict=MixedPrecisionPrediction,
    verdict=verdict,
    chart_data=chart_points,
    scripts=("js/demo-mixed-precision.js",),
    passes=N_("all-reduce bytes from a counted all-reduce, probes on; this page shows no time."),
)
