"""Generators on inference memory (app/quiz/generators/inference.py) against hand counts."""

from __future__ import annotations

import pytest

from app.quiz.generators import GENERATORS

LLAMA2_70B = 3  # index in app.quiz.generators.training_memory.MODELS
# Llama 2 paper, Section 2.2 and config.json: L = 80, 8 KV heads of dimension 128.
LLAMA2_70B_KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2


def test_llama2_70b_kv_bytes_per_token() -> None:
    bf16 = GENERATORS["inference.kv_bytes_per_token"]({"model": LLAMA2_70B})
    fp8 = GENERATORS["inference.kv_bytes_per_token"]({"model": LLAMA2_70B, "kv_dtype": 1})
    assert bf16.answer == LLAMA2_70B_KV_PER_TOKEN == 327_680
    assert fp8.answer == LLAMA2_70B_KV_PER_TOKEN / 2


def test_kv_cache_per_gpu_stops_shrinking_past_the_kv_heads() -> None:
    def per_gpu(tp: int) -> float:
        inputs = {"model": LLAMA2_70B, "tp": tp, "context": 4096, "batch": 8}
        return GENERATORS["inference.kv_cache_per_gpu"](inputs).answer

    assert per_gpu(8) == pytest.approx(LLAMA2_70B_KV_PER_TOKEN / 8 * 4096 * 8 / 1e9)
    assert per_gpu(4) == pytest.approx(2 * per_gpu(8))
    assert per_gpu(16) == pytest.approx(per_gpu(8))  # one replicated KV head per GPU


def test_weights_per_gpu() -> None:
    solution = GENERATORS["inference.weights_per_gpu"]({"model": LLAMA2_70B, "tp": 4})
    assert solution.answer == pytest.approx(68_976_648_192 * 2 / 4 / 1e9)
