r"""The collectives one tensor-parallel block issues, pass by pass, for each way of splitting it.

A block takes X of shape (tokens, h) replicated on t ranks and gives back Y of the same shape,
replicated. What each split must move (Shoeybi et al., Megatron-LM, arXiv:1909.08053, Section 3,
Figures 3 and 4; Korthikanti et al., arXiv:2205.05198, Section 4.2.2 for the f and g names):

- MLP, column then row, Y = GeLU(X A) B with A split by columns and B by rows: the column-split
  output of the first GEMM is exactly the input the row-split GEMM needs, so the only collective
  is g, an all-reduce of the partial sums (tokens x h) in the forward pass, and its conjugate f,
  an all-reduce of dX (tokens x h) in the backward pass;
- MLP, row then column, A split by rows and B by columns: the first GEMM leaves partial sums of
  the wide activation (tokens x f), which must be all-reduced before the GeLU, and the second
  leaves column slices of Y, which must be all-gathered; the backward pass mirrors it (dZ is a
  sum of partials, dX is gathered from slices): one all-reduce of tokens x f and one all-gather
  of tokens x h in each pass, about f/h + 1/2 times the column-then-row volume;
- attention split by heads: W_Q, W_K, W_V by columns (whole heads per rank), W_O by rows: the
  same one all-reduce of tokens x h forward and one backward as the column-then-row MLP.

Payloads are S as nccl-tests defines it (app.calc.comm): the all-reduce buffer, the all-gather's
full output. Bytes one rank sends are app.calc.comm's ring factors times S.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.calc.comm import Collective, ring_bytes_per_rank

TP_SOURCE = "Shoeybi et al., Megatron-LM, arXiv:1909.08053, Section 3, Figures 3-4"
F_G_SOURCE = "Korthikanti et al., arXiv:2205.05198, Section 4.2.2 (f and g)"

FORWARD = "forward"
BACKWARD = "backward"
PASSES = (FORWARD, BACKWARD)


class TPLayout(StrEnum):
    MLP_COLUMN_ROW = "mlp_column_row"
    MLP_ROW_COLUMN = "mlp_row_column"
    ATTENTION_HEADS = "attention_heads"


@dataclass(frozen=True)
class TPCollective:
    """One collective a tensor-parallel block issues in one pass."""

    pass_: str  # FORWARD or BACKWARD
    kind: Collective
    payload_bytes: int  # S, as nccl-tests defines it for this kind
    role: str  # what it does in the block, for the page

    def bytes_per_rank(self, tp: int) -> float:
        """Bytes one rank sends for it in NCCL's ring algorithm."""
        return ring_bytes_per_rank(self.kind, self.payload_bytes, tp)


def tp_block_collectives(
    layout: TPLayout, tokens: int, hidden: int, ffn_hidden: int, dtype_bytes: int
) -> tuple[TPCollective, ...]:
    """Every collective of one block's forward and backward pass, in the order it is issued."""
    if min(tokens, hidden, ffn_hidden, dtype_bytes) < 1:
        raise ValueError("tokens, hidden, ffn_hidden and dtype_bytes must be at least 1")
    narrow = tokens * hidden * dtype_bytes
    wide = tokens * ffn_hidden * dtype_bytes
    ar, ag = Collective.ALL_REDUCE, Collective.ALL_GATHER
    if TPLayout(layout) == TPLayout.MLP_ROW_COLUMN:
        return (
            TPCollective(FORWARD, ar, wide, "sum the partial X·A before the GeLU"),
            TPCollective(FORWARD, ag, narrow, "gather the column slices of Y"),
            TPCollective(BACKWARD, ar, wide, "sum the partial dZ = dY·Bᵀ"),
            TPCollective(BACKWARD, ag, narrow, "gather the column slices of dX"),
        )
    return (
        TPCollective(FORWARD, ar, narrow, "g: sum the partial outputs"),
        TPCollective(BACKWARD, ar, narrow, "f: sum the partial dX"),
    )


def tp_pass_bytes_per_rank(collectives: tuple[TPCollective, ...], pass_: str, tp: int) -> float:
    """Bytes one rank sends in one pass (ring algorithms)."""
    return sum(c.bytes_per_rank(tp) for c in collectives if c.pass_ == pass_)
