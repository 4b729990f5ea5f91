"""Tensor-parallel collectives per pass, against Megatron-LM's counts and hand-derived bytes."""

from __future__ import annotations

import pytest

from app.calc.comm import Collective
from app.calc.comm_volume import tp_layer_elements
from app.calc.tensor_parallel import (
    BACKWARD,
    FORWARD,
    TPLayout,
    tp_block_collectives,
    tp_pass_bytes_per_rank,
)

# feasibility §6: MLP 256 -> 1024 -> 256, 32 tokens, fp32, measured with torch 2.13 on gloo.
TOKENS, HIDDEN, FFN, FP32 = 32, 256, 1024, 4


def test_column_then_row_is_one_all_reduce_of_tokens_by_hidden_each_way() -> None:
    calls = tp_block_collectives(TPLayout.MLP_COLUMN_ROW, TOKENS, HIDDEN, FFN, FP32)
    assert [(c.pass_, c.kind, c.payload_bytes) for c in calls] == [
        (FORWARD, Collective.ALL_REDUCE, 32_768),
        (BACKWARD, Collective.ALL_REDUCE, 32_768),
    ]


def test_row_then_column_all_reduces_the_wide_activation_and_gathers_the_output() -> None:
    calls = tp_block_collectives(TPLayout.MLP_ROW_COLUMN, TOKENS, HIDDEN, FFN, FP32)
    assert [(c.pass_, c.kind, c.payload_bytes) for c in calls] == [
        (FORWARD, Collective.ALL_REDUCE, 131_072),
        (FORWARD, Collective.ALL_GATHER, 32_768),
        (BACKWARD, Collective.ALL_REDUCE, 131_072),
        (BACKWARD, Collective.ALL_GATHER, 32_768),
    ]
    # At 4 ranks one rank sends 2*3/4 * 131,072 + 3/4 * 32,768 = 196,608 + 24,576 per pass.
    assert tp_pass_bytes_per_rank(calls, FORWARD, 4) == 221_184
    assert tp_pass_bytes_per_rank(calls, BACKWARD, 4) == 221_184


def test_attention_by_heads_moves_what_the_column_then_row_mlp_moves() -> None:
    attention = tp_block_collectives(TPLayout.ATTENTION_HEADS, TOKENS, HIDDEN, FFN, FP32)
    mlp = tp_block_collectives(TPLayout.MLP_COLUMN_ROW, TOKENS, HIDDEN, FFN, FP32)
    assert [(c.pass_, c.kind, c.payload_bytes) for c in attention] == [
        (c.pass_, c.kind, c.payload_bytes) for c in mlp
    ]


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_attention_plus_mlp_is_megatrons_four_all_reduces_per_layer(tp: int) -> None:
    batch, seq, hidden = 2, 16, 64
    layer = [
        *tp_block_collectives(TPLayout.ATTENTION_HEADS, batch * seq, hidden, 4 * hidden, 2),
        *tp_block_collectives(TPLayout.MLP_COLUMN_ROW, batch * seq, hidden, 4 * hidden, 2),
    ]
    sent = sum(c.bytes_per_rank(tp) for c in layer)
    assert sent == tp_layer_elements(batch, seq, hidden, tp) * 2


def test_one_rank_sends_nothing() -> None:
    calls = tp_block_collectives(TPLayout.MLP_COLUMN_ROW, TOKENS, HIDDEN, FFN, FP32)
    assert tp_pass_bytes_per_rank(calls, FORWARD, 1) == 0


def test_empty_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        tp_block_collectives(TPLayout.MLP_COLUMN_ROW, 0, HIDDEN, FFN, FP32)
