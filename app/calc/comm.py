"""Bytes each rank moves in the collectives NCCL runs, and nccl-tests' bus-bandwidth factors.

For a collective of size S on N ranks, nccl-tests reports algbw = S / t and busbw = algbw *
factor, the factor chosen so that busbw is the bandwidth of the busiest rank's link: the
fraction of S that crosses that link in one direction (nccl-tests doc/PERFORMANCE.md, "Bus
bandwidth"; the `*GetBw` functions of src/*.cu, NVIDIA/nccl-tests@a0b82b22). S is what
nccl-tests sizes the test by:

- all-reduce, S = each rank's buffer: a reduce-scatter then an all-gather, each moving
  (N-1)/N of S: 2(N-1)/N (src/all_reduce.cu:59 AllReduceGetBw);
- reduce-scatter, S = the full input, and all-gather, S = the full output: (N-1)/N
  (src/reduce_scatter.cu:37 ReduceScatterGetBw, src/all_gather.cu:38 AllGatherGetBw);
- all-to-all, S = one rank's whole buffer: (N-1)/N of it leaves the rank
  (src/alltoall.cu:48 AlltoAllGetBw);
- broadcast and reduce, S = the root's buffer: pipelined along a ring (a chain), every rank
  but the last forwards all of S (broadcast) or every rank but the root sends a partial sum
  of all of S (reduce): 1 (src/broadcast.cu:34 BroadcastGetBw, src/reduce.cu:36 ReduceGetBw;
  PERFORMANCE.md lists both as 1);
- gather and scatter, S = the root's full buffer (count * nranks in nccl-tests): the root
  receives (gather) or sends (scatter) the N-1 pieces that are not its own, (N-1)/N
  (src/gather.cu:38 GatherGetBw, src/scatter.cu:34 ScatterGetBw; PERFORMANCE.md does not list
  them, the code does).

Ring volumes after Patarasuk & Yuan 2009. For the rooted collectives (broadcast, reduce,
gather, scatter) the ranks do not all send the same: the factor is the busiest rank's share.
"""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction
from functools import lru_cache

NCCL_TESTS_COMMIT = "a0b82b22"


class Collective(StrEnum):
    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    ALL_TO_ALL = "all_to_all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    GATHER = "gather"
    SCATTER = "scatter"


# Where nccl-tests computes each factor (file:line of the *GetBw function at NCCL_TESTS_COMMIT).
NCCL_TESTS_GETBW = {
    Collective.ALL_REDUCE: "src/all_reduce.cu:59 AllReduceGetBw",
    Collective.REDUCE_SCATTER: "src/reduce_scatter.cu:37 ReduceScatterGetBw",
    Collective.ALL_GATHER: "src/all_gather.cu:38 AllGatherGetBw",
    Collective.ALL_TO_ALL: "src/alltoall.cu:48 AlltoAllGetBw",
    Collective.BROADCAST: "src/broadcast.cu:34 BroadcastGetBw",
    Collective.REDUCE: "src/reduce.cu:36 ReduceGetBw",
    Collective.GATHER: "src/gather.cu:38 GatherGetBw",
    Collective.SCATTER: "src/scatter.cu:34 ScatterGetBw",
}


def nccl_tests_source(kind: Collective) -> str:
    """`NVIDIA/nccl-tests@<commit> <file>:<line> <function>` for one collective's factor."""
    return f"NVIDIA/nccl-tests@{NCCL_TESTS_COMMIT} {NCCL_TESTS_GETBW[Collective(kind)]}"


@lru_cache(maxsize=4096)  # the planner asks the same few thousand times per search
def ring_factor(kind: Collective, ranks: int) -> Fraction:
    """The fraction of S that crosses the busiest rank's link: nccl-tests' busbw / algbw.

    One rank moves nothing, so the factor is 0 there (nccl-tests would print 1 for broadcast
    and reduce on one rank, where no byte leaves the GPU)."""
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
        Collective.REDUCE: Fraction(1),
        Collective.GATHER: share,
        Collective.SCATTER: share,
    }
    return factors[Collective(kind)]


def ring_bytes_per_rank(kind: Collective, payload_bytes: int, ranks: int) -> float:
    """Bytes the busiest rank sends (or, for gather, receives) for one collective of
    `payload_bytes` = S on `ranks` ranks: ring_factor * S."""
    if payload_bytes < 0:
        raise ValueError("payload_bytes must not be negative")
    return float(ring_factor(kind, ranks) * payload_bytes)
