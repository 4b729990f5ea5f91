"""Bytes each rank sends in the ring algorithms NCCL uses for its collectives.

Per-rank send volumes for a payload of S bytes on N ranks (Patarasuk & Yuan 2009; the
factors nccl-tests uses to turn algorithm bandwidth into bus bandwidth, see
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):

- all-reduce = reduce-scatter + all-gather, each moving (N-1)/N of S: 2(N-1)/N * S;
- reduce-scatter (S = the full input) and all-gather (S = the full output): (N-1)/N * S;
- all-to-all (S = one rank's whole buffer): (N-1)/N * S leaves the rank;
- broadcast from one root along a pipelined ring: S per rank (the last one forwards nothing).
"""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction
from functools import lru_cache


class Collective(StrEnum):
    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    ALL_TO_ALL = "all_to_all"
    BROADCAST = "broadcast"


@lru_cache(maxsize=4096)  # the planner asks the same few thousand times per search
def ring_factor(kind: Collective, ranks: int) -> Fraction:
    """The fraction of the payload S that each rank sends in the ring algorithm."""
    if ranks < 1:
        raise ValueError("ranks must be at least 1")
    if ranks == 1:
        return Fraction(0)
    share = Fraction(ranks - 1, ranks)
    factors = {
        Collective.ALL_REDUCE: 2 * share,
        Collective.REDUCE_SCATTER: share,
        Collective.ALL_GATHER: share,
        Collective.ALL_TO_ALL: share,
        Collective.BROADCAST: Fraction(1),
    }
    return factors[Collective(kind)]


def ring_bytes_per_rank(kind: Collective, payload_bytes: int, ranks: int) -> float:
    """Bytes one rank sends for one collective of `payload_bytes` on `ranks` ranks."""
    if payload_bytes < 0:
        raise ValueError("payload_bytes must not be negative")
    return float(ring_factor(kind, ranks) * payload_bytes)
