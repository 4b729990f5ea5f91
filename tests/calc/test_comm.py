"""Ring collective volumes against hand derivations and nccl-tests' bus-bandwidth factors."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor


def test_all_reduce_on_two_ranks_sends_the_buffer_once() -> None:
    # Reduce-scatter sends S/2, all-gather sends S/2: S in all.
    assert ring_bytes_per_rank(Collective.ALL_REDUCE, 4 * 2**20, 2) == 4 * 2**20


def test_all_reduce_on_four_ranks_sends_one_and_a_half_buffers() -> None:
    assert ring_bytes_per_rank(Collective.ALL_REDUCE, 16 * 2**20, 4) == 24 * 2**20


@pytest.mark.parametrize(
    ("kind", "factor"),
    # nccl-tests doc/PERFORMANCE.md: busBw = algBw * factor, 8 ranks.
    [
        (Collective.ALL_REDUCE, Fraction(14, 8)),
        (Collective.REDUCE_SCATTER, Fraction(7, 8)),
        (Collective.ALL_GATHER, Fraction(7, 8)),
        (Collective.ALL_TO_ALL, Fraction(7, 8)),
        (Collective.BROADCAST, Fraction(1)),
    ],
)
def test_factors_match_nccl_tests_bus_bandwidth(kind: Collective, factor: Fraction) -> None:
    assert ring_factor(kind, 8) == factor


@given(st.integers(min_value=2, max_value=4096))
def test_all_reduce_is_reduce_scatter_plus_all_gather(n: int) -> None:
    assert ring_factor(Collective.ALL_REDUCE, n) == (
        ring_factor(Collective.REDUCE_SCATTER, n) + ring_factor(Collective.ALL_GATHER, n)
    )


@given(st.integers(min_value=2, max_value=10**6))
def test_all_reduce_approaches_twice_the_buffer(n: int) -> None:
    assert 1 <= ring_factor(Collective.ALL_REDUCE, n) < 2


def test_one_rank_sends_nothing_and_zero_ranks_is_an_error() -> None:
    assert ring_bytes_per_rank(Collective.ALL_REDUCE, 1024, 1) == 0
    with pytest.raises(ValueError):
        ring_factor(Collective.ALL_REDUCE, 0)
