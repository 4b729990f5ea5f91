"""Ring collective volumes against hand derivations and nccl-tests' bus-bandwidth factors."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.comm import Collective, nccl_tests_source, ring_bytes_per_rank, ring_factor
from app.calc.communication_query import collective_row
from app.calc.links import LINKS


def test_all_reduce_on_two_ranks_sends_the_buffer_once() -> None:
    # Reduce-scatter sends S/2, all-gather sends S/2: S in all.
    assert ring_bytes_per_rank(Collective.ALL_REDUCE, 4 * 2**20, 2) == 4 * 2**20


def test_all_reduce_on_four_ranks_sends_one_and_a_half_buffers() -> None:
    assert ring_bytes_per_rank(Collective.ALL_REDUCE, 16 * 2**20, 4) == 24 * 2**20


# nccl-tests' *GetBw (src/*.cu at NVIDIA/nccl-tests@a0b82b22): busBw = algBw * factor with
# factor 2(n-1)/n (all_reduce.cu), (n-1)/n (reduce_scatter, all_gather, alltoall, gather,
# scatter) and 1 (broadcast.cu, reduce.cu), evaluated by hand at n = 8 and n = 2.
NCCL_TESTS_FACTORS = {
    Collective.ALL_REDUCE: {8: Fraction(14, 8), 2: Fraction(1)},
    Collective.REDUCE_SCATTER: {8: Fraction(7, 8), 2: Fraction(1, 2)},
    Collective.ALL_GATHER: {8: Fraction(7, 8), 2: Fraction(1, 2)},
    Collective.ALL_TO_ALL: {8: Fraction(7, 8), 2: Fraction(1, 2)},
    Collective.BROADCAST: {8: Fraction(1), 2: Fraction(1)},
    Collective.REDUCE: {8: Fraction(1), 2: Fraction(1)},
    Collective.GATHER: {8: Fraction(7, 8), 2: Fraction(1, 2)},
    Collective.SCATTER: {8: Fraction(7, 8), 2: Fraction(1, 2)},
}


@pytest.mark.parametrize("ranks", [8, 2])
@pytest.mark.parametrize("kind", list(NCCL_TESTS_FACTORS))
def test_factors_match_nccl_tests_bus_bandwidth(kind: Collective, ranks: int) -> None:
    assert ring_factor(kind, ranks) == NCCL_TESTS_FACTORS[kind][ranks]


def test_every_collective_has_a_factor_and_its_nccl_tests_line() -> None:
    assert set(NCCL_TESTS_FACTORS) == set(Collective)
    assert nccl_tests_source(Collective.REDUCE) == (
        "NVIDIA/nccl-tests@a0b82b22 src/reduce.cu:36 ReduceGetBw"
    )
    assert nccl_tests_source(Collective.SCATTER).endswith("src/scatter.cu:34 ScatterGetBw")


def test_a_reduce_timed_by_hand() -> None:
    # Reduce of S = 1 GB on 8 ranks over NVLink 4 (beta 450 GB/s, alpha 3.4 us): the chain
    # takes N-1 = 7 steps and the busiest link carries 1 * S:
    # t = 7 * 3.4 us + 1e9 B / 450e9 B/s = 23.8 us + 2222.22 us = 2246.02 us.
    row = collective_row(Collective.REDUCE, 8, 1e9, LINKS["nvlink4"])
    assert row["sent_bytes"] == 1e9
    assert row["latency_steps"] == 7
    assert row["time_s"] == pytest.approx(7 * 3.4e-6 + 1e9 / 450e9, rel=1e-12)
    assert row["time_s"] == pytest.approx(2.24602e-3, rel=1e-5)
    # busbw = algbw * 1 = 1e9 / 2.24602 ms = 445.23 GB/s, just under the link's 450.
    assert row["busbw_bytes_per_s"] == pytest.approx(445.23e9, rel=1e-5)


def test_a_gather_on_two_ranks_timed_by_hand() -> None:
    # Gather of S = 100 MB (both ranks' pieces) on 2 ranks over InfiniBand NDR (50 GB/s, 14 us):
    # the root receives the other half, 50 MB, in one step: t = 14 us + 50e6 / 50e9 s = 1.014 ms.
    row = collective_row(Collective.GATHER, 2, 100e6, LINKS["ib-ndr"])
    assert row["sent_bytes"] == 50e6
    assert row["time_s"] == pytest.approx(1.014e-3, rel=1e-12)
    assert row["algbw_bytes_per_s"] == pytest.approx(100e6 / 1.014e-3, rel=1e-12)
    assert row["busbw_bytes_per_s"] == pytest.approx(row["algbw_bytes_per_s"] / 2, rel=1e-12)


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
