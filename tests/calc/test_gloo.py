"""What gloo writes per rank, against the wire bytes measured in feasibility §1 (16 MiB)."""

from __future__ import annotations

import pytest

from app.calc.comm import Collective
from app.calc.gloo import binomial_tree_sends, gloo_bytes_per_rank

MIB = 2**20
S = 16 * MIB


@pytest.mark.parametrize(
    ("kind", "ranks", "per_rank_mib"),
    [
        (Collective.ALL_REDUCE, 2, 16),
        (Collective.ALL_REDUCE, 4, 24),
        (Collective.REDUCE_SCATTER, 2, 16),  # the ring would send 8
        (Collective.REDUCE_SCATTER, 4, 24),  # the ring would send 12
        (Collective.ALL_GATHER, 4, 12),
        (Collective.ALL_TO_ALL, 2, 8),
        (Collective.ALL_TO_ALL, 4, 12),
    ],
)
def test_measured_wire_bytes(kind: Collective, ranks: int, per_rank_mib: int) -> None:
    assert gloo_bytes_per_rank(kind, S, ranks, rank=0) == per_rank_mib * MIB


def test_broadcast_is_a_binomial_tree() -> None:
    # measured: W=2 r0 16, r1 0; W=4 r0 32, r1 16, r2 0, r3 0 (MiB)
    assert [gloo_bytes_per_rank(Collective.BROADCAST, S, 2, r) for r in range(2)] == [S, 0]
    assert [gloo_bytes_per_rank(Collective.BROADCAST, S, 4, r) for r in range(4)] == [
        2 * S,
        S,
        0,
        0,
    ]


@pytest.mark.parametrize("ranks", [1, 2, 3, 5, 8, 13])
def test_a_tree_sends_one_copy_to_every_other_rank(ranks: int) -> None:
    for root in range(ranks):
        assert sum(binomial_tree_sends(r, ranks, root) for r in range(ranks)) == ranks - 1
    assert binomial_tree_sends(0, 8) == 3  # log2 8


def test_a_rank_outside_the_group_is_refused() -> None:
    with pytest.raises(ValueError):
        binomial_tree_sends(4, 4)
