"""Saved-for-backward bytes of a residual MLP stack, derived by hand."""

from __future__ import annotations

import pytest

from app.calc.activations import mlp_stack_saved_bytes


def test_without_recompute_each_block_keeps_its_input_and_both_gelu_tensors() -> None:
    # 4 blocks, 64 tokens, width 32, hidden 128, fp32: 4 * 64 * (32 + 128 + 128) * 4
    assert mlp_stack_saved_bytes(4, 64, 32, 128, 4) == 294_912


def test_paper_case_is_korthikantis_18sbh_without_the_dropout_mask() -> None:
    s_b, h = 2048, 1024  # tokens = s*b, 16-bit values, hidden 4h
    assert mlp_stack_saved_bytes(1, s_b, h, 4 * h, 2) == 18 * s_b * h


@pytest.mark.parametrize(
    ("segment", "expected"),
    [(1, 4 * 64 * 32 * 4), (2, 2 * 64 * 32 * 4), (3, 2 * 64 * 32 * 4), (4, 64 * 32 * 4)],
)
def test_checkpointed_segments_keep_only_their_inputs(segment: int, expected: int) -> None:
    assert mlp_stack_saved_bytes(4, 64, 32, 128, 4, segment_layers=segment) == expected


def test_a_segment_longer_than_the_stack_is_refused() -> None:
    with pytest.raises(ValueError, match="segment_layers must be from 1 to 4"):
        mlp_stack_saved_bytes(4, 64, 32, 128, 4, segment_layers=5)
