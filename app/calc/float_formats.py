"""Binary floating-point formats (fp32, fp16, bf16) from their field widths: their range, their
rounding, and what share of a spread of magnitudes flushes to zero or overflows; the mixed
precision card and demo use them to show why fp16 needs loss scaling and bf16 does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format, from its field widths (IEEE 754-2008 Section 3.3).

    With e exponent bits (bias 2^(e-1) - 1) and m stored fraction bits, the largest finite
    value is (2 - 2^-m) * 2^bias, the smallest normal 2^(1 - bias), the smallest subnormal
    2^(1 - bias - m), machine epsilon 2^-m and the unit roundoff of round-to-nearest 2^-(m+1).
    """

    name: str
    exponent_bits: int
    fraction_bits: int
    source: str

    @property
    def bytes_(self) -> int:
        """Storage per value: a sign bit, the exponent and the fraction, in bytes."""
        return (1 + self.exponent_bits + self.fraction_bits) // 8

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_finite(self) -> float:
        return (2 - 2.0**-self.fraction_bits) * 2.0**self.bias

    @property
    def smallest_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def smallest_subnormal(self) -> float:
        return 2.0 ** (1 - self.bias - self.fraction_bits)

    @property
    def machine_epsilon(self) -> float:
        return 2.0**-self.fraction_bits

    @property
    def unit_roundoff(self) -> float:
        """The largest relative error of rounding a value in the normal range to nearest."""
        return 2.0 ** -(self.fraction_bits + 1)

    @property
    def underflow_log2(self) -> int:
        """log2 of half the smallest subnormal: round-to-nearest-even sends |x| <= it to 0."""
        return -self.bias - self.fraction_bits

    @property
    def overflow_threshold(self) -> float:
        """|x| at or above this rounds to infinity: max finite plus half its last step."""
        return self.max_finite + 2.0 ** (self.bias - self.fraction_bits - 1)


FP32 = FloatFormat("fp32", 8, 23, "IEEE 754-2008 binary32 (Table 3.5)")
FP16 = FloatFormat("fp16", 5, 10, "IEEE 754-2008 binary16 (Table 3.5)")
BF16 = FloatFormat(
    "bf16",
    8,
    7,
    "Google's bfloat16: fp32's sign and 8-bit exponent, 7 fraction bits "
    "(Kalamkar et al., arXiv:1905.12322, Section 2)",
)
FLOAT_FORMATS = {fmt.name: fmt for fmt in (FP32, FP16, BF16)}


def round_to_format(value: float, fmt: FloatFormat) -> float:
    """`value` rounded to `fmt` with round-to-nearest, ties to even (IEEE 754-2008 §4.3.1).

    Exact for any float64 input that is itself representable in fp32 or whose rounding to
    `fmt` is not a tie after float64 rounding. Overflow gives a signed infinity, underflow
    a signed zero; subnormals keep the step of the smallest normal binade.
    """
    if value == 0 or not math.isfinite(value):
        return value
    magnitude = abs(value)
    _, exponent = math.frexp(magnitude)  # magnitude = f * 2^exponent, 0.5 <= f < 1
    binade = max(exponent - 1, 1 - fmt.bias)
    step = 2.0 ** (binade - fmt.fraction_bits)
    rounded = round(magnitude / step) * step  # Python's round() ties to even
    if rounded > fmt.max_finite:
        rounded = math.inf
    return math.copysign(rounded, value)


def fraction_flushed_to_zero(low_log2: float, high_log2: float, fmt: FloatFormat) -> float:
    """Share of magnitudes 2^u, u uniform on [low, high], that round to zero in `fmt`.

    Micikevicius et al., "Mixed Precision Training" (arXiv:1710.03740) Section 3.2: gradient
    values below fp16's smallest subnormal, 2^-24, are lost; with round-to-nearest the line
    is half of it, 2^-25. Loss scaling by 2^s moves [low, high] up by s.
    """
    return _share_below(fmt.underflow_log2, low_log2, high_log2)


def fraction_overflowing(low_log2: float, high_log2: float, fmt: FloatFormat) -> float:
    """Share of magnitudes 2^u, u uniform on [low, high], that round to infinity in `fmt`."""
    return 1 - _share_below(math.log2(fmt.overflow_threshold), low_log2, high_log2)


def _share_below(line_log2: float, low_log2: float, high_log2: float) -> float:
    if high_log2 <= low_log2:
        raise ValueError(f"high_log2 must exceed low_log2, got [{low_log2}, {high_log2}]")
    return min(1.0, max(0.0, (line_log2 - low_log2) / (high_log2 - low_log2)))
