"""Generators on the roofline calculator (app/quiz/generators/roofline.py) against HTSYM figures."""

from __future__ import annotations

import pytest

from app.quiz.generators import GENERATORS


@pytest.mark.parametrize(("gpu", "expected"), [(0, 295), (5, 240)])
def test_ridge_points_match_how_to_scale_your_model(gpu: int, expected: float) -> None:
    # "All About Rooflines": 9.89e14 / 3.35e12 = 295 (H100), 1.97e14 / 8.2e11 = 240 (TPU v5e).
    assert GENERATORS["roofline.ridge_point"]({"gpu": gpu}).answer == pytest.approx(
        expected, rel=0.01
    )


def test_matmul_intensity_by_hand() -> None:
    # 2BDF / (2(BD + DF + BF)) with B = 256, D = F = 8192 is BD / (2B + D).
    solution = GENERATORS["roofline.matmul_intensity"]({"b": 256, "d": 8192, "f": 8192})
    assert solution.answer == pytest.approx(256 * 8192 / (2 * 256 + 8192))


def test_critical_batch_is_the_same_in_bf16_and_fp8() -> None:
    bf16 = GENERATORS["roofline.critical_batch"]({"d": 8192, "f": 8192, "gpu": 0, "dtype": 0})
    fp8 = GENERATORS["roofline.critical_batch"]({"d": 8192, "f": 8192, "gpu": 0, "dtype": 1})
    ridge = 989.4 / 3.35
    # D = F: B = R bytes D^2 / (2 D^2 - 2 R bytes D) = R D / (D - 2R) in bf16.
    assert bf16.answer == pytest.approx(ridge * 8192 / (8192 - 2 * ridge))
    assert fp8.answer == pytest.approx(bf16.answer, rel=1e-3)


def test_decode_at_batch_one_reaches_about_the_bandwidth_in_flops() -> None:
    solution = GENERATORS["roofline.matmul_attainable_tflops"]({"b": 1, "d": 8192, "f": 8192})
    intensity = 2 * 8192 * 8192 / (2 * (8192 + 8192 * 8192 + 8192))
    assert solution.answer == pytest.approx(intensity * 3.35)
