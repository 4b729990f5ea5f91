"""Float formats from their field widths, against the IEEE 754 and bfloat16 published limits."""

from __future__ import annotations

import math

import pytest

from app.calc.float_formats import (
    BF16,
    FP16,
    FP32,
    fraction_flushed_to_zero,
    fraction_overflowing,
    round_to_format,
)


def test_fp16_limits_are_the_published_binary16_ones() -> None:
    assert FP16.bias == 15
    assert (FP16.bytes_, BF16.bytes_, FP32.bytes_) == (2, 2, 4)
    assert FP16.max_finite == 65504
    assert FP16.smallest_normal == 2**-14 == pytest.approx(6.103515625e-05)
    assert FP16.smallest_subnormal == 2**-24 == pytest.approx(5.960464477539063e-08)
    assert FP16.machine_epsilon == 2**-10
    assert FP16.unit_roundoff == 2**-11
    assert FP16.underflow_log2 == -25
    assert FP16.overflow_threshold == 65520  # halfway to 65536, which would need exponent 16


def test_bf16_keeps_fp32_range_with_8_significant_bits() -> None:
    assert BF16.bias == FP32.bias == 127
    assert BF16.smallest_normal == FP32.smallest_normal == 2**-126
    assert BF16.max_finite == pytest.approx(3.3895313892515355e38)
    assert FP32.max_finite == pytest.approx(3.4028234663852886e38)
    assert BF16.machine_epsilon == 2**-7
    assert BF16.unit_roundoff == 2**-8
    assert BF16.smallest_subnormal == 2**-133
    assert FP32.smallest_subnormal == 2**-149


@pytest.mark.parametrize(
    ("value", "fmt", "expected"),
    [
        (65504.0, FP16, 65504.0),
        (65519.0, FP16, 65504.0),  # below the halfway point 65520
        (65520.0, FP16, math.inf),  # the tie goes to the even neighbour, 2^16: overflow
        (-1e5, FP16, -math.inf),
        (2.0**-24, FP16, 2.0**-24),
        (2.0**-25, FP16, 0.0),  # tie between 0 and 2^-24: 0 is even
        (3 * 2.0**-26, FP16, 2.0**-24),  # 0.75 of the smallest subnormal rounds up
        (1 + 2.0**-11, FP16, 1.0),  # tie, 1.0 has the even last bit
        (1 + 3 * 2.0**-11, FP16, 1 + 2.0**-9),  # tie, rounds up to the even neighbour
        (65504.0, BF16, 65536.0),  # bf16 steps are 256 around 2^16
        (1e5, BF16, 99840.0),
        (1 / 3, BF16, 0.333984375),  # 0b0.010101011 (8 significant bits)
        (2.0**-25, BF16, 2.0**-25),
        (0.0, FP16, 0.0),
    ],
)
def test_round_to_format_by_hand(value: float, fmt, expected: float) -> None:
    assert round_to_format(value, fmt) == expected


def test_flushed_share_of_a_log_uniform_spread() -> None:
    # magnitudes 2^-30 .. 2^-16: everything under 2^-25 (5 of the 14 octaves) is lost in fp16
    assert fraction_flushed_to_zero(-30, -16, FP16) == pytest.approx(5 / 14)
    # loss scale 2^16 moves the spread to 2^-14 .. 2^0: nothing lost
    assert fraction_flushed_to_zero(-14, 0, FP16) == 0
    assert fraction_flushed_to_zero(-30, -16, BF16) == 0
    assert fraction_flushed_to_zero(-40, -30, FP16) == 1


def test_overflow_share_of_a_log_uniform_spread() -> None:
    assert fraction_overflowing(0, 20, FP16) == pytest.approx((20 - math.log2(65520)) / 20)
    assert fraction_overflowing(-14, 0, FP16) == 0
    assert fraction_overflowing(0, 20, BF16) == 0
