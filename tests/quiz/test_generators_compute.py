"""Generators on the compute calculator (app/quiz/generators/compute.py) against published runs."""

from __future__ import annotations

import pytest

from app.quiz.generators import GENERATORS


def test_gpt3_training_flops_is_6nd() -> None:
    solution = GENERATORS["compute.training_flops"]({"params": 175e9, "tokens": 300e9})
    assert solution.answer == pytest.approx(6 * 175e9 * 300e9)
    # Brown et al. 2020, Table D.1: 3.14e23 FLOPs (with N = 174.6B).
    assert solution.answer == pytest.approx(3.14e23, rel=0.01)


def test_full_recompute_executes_8nd() -> None:
    solution = GENERATORS["compute.training_flops"]({"params": 7e9, "tokens": 2e12, "mode": 1})
    assert solution.answer == pytest.approx(8 * 7e9 * 2e12)


def test_narayanan_gpt3_on_1024_a100s_takes_about_34_days() -> None:
    # Narayanan et al. 2021, Section 5.1: 8TP/(nX), X = 140 TFLOP/s per A100: "about 34 days".
    inputs = {"params": 175e9, "tokens": 300e9, "mode": 1, "gpu": 0, "gpus": 1024,
              "utilization": 140 / 312}  # fmt: skip
    assert GENERATORS["compute.training_days"](inputs).answer == pytest.approx(34, rel=0.01)
    hours = GENERATORS["compute.gpu_hours"](inputs).answer
    assert hours == pytest.approx(8 * 175e9 * 300e9 / 140e12 / 3600)


def test_mfu_counts_6n_and_hfu_8n_under_full_recompute() -> None:
    inputs = {"params": 70e9, "mode": 1, "gpu": 1, "gpus": 2048, "measured_tokens_per_s": 1e6}
    mfu = GENERATORS["compute.mfu_percent"](inputs).answer
    hfu = GENERATORS["compute.hfu_percent"](inputs).answer
    assert mfu == pytest.approx(100 * 1e6 * 6 * 70e9 / (2048 * 989.4e12))
    assert hfu == pytest.approx(mfu * 8 / 6)
