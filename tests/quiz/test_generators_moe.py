"""Generators on mixture-of-experts load (app/quiz/generators/moe.py) against hand counts."""

from __future__ import annotations

import pytest

from app.quiz.generators import GENERATORS

# Mixtral 8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): h = 4,096, expert width f = 14,336,
# top 2 of 8, SwiGLU. One layer's MoE block on one GPU, bf16, n tokens, a GPU whose expert
# receives c times its balanced share of copies: its input 2nh, then per routed copy the
# permuted token 2nh and the gate, up and product tensors 3 * 2nf.
H, F, K = 4096, 14336, 2


def hand_count_mb(n: int, c: int) -> float:
    return (2 * n * H + c * K * (2 * n * H + 3 * 2 * n * F)) / 1e6


@pytest.mark.parametrize("load", [1, 2, 4])
def test_the_hot_gpu_saves_its_share_of_routed_copies(load: int) -> None:
    solution = GENERATORS["moe.moe_layer_activation_mb"](
        {"load": load, "seq_len": 4096, "micro_batch": 1}
    )
    assert solution.answer == pytest.approx(hand_count_mb(4096, load))
    assert solution.prompt_fields["load"] == str(load)


def test_the_balanced_layer_is_805_mb() -> None:
    solution = GENERATORS["moe.moe_layer_activation_mb"](
        {"load": 1, "seq_len": 4096, "micro_batch": 1}
    )
    assert solution.answer == pytest.approx(805.306368)  # 2nh(1 + 2) + 2 * 3 * 2nf, n = 4,096


def test_more_copies_than_experts_is_refused() -> None:
    with pytest.raises(ValueError, match="exceed"):
        GENERATORS["moe.moe_layer_activation_mb"]({"load": 8, "seq_len": 2048, "micro_batch": 1})
