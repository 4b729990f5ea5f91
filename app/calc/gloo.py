"""Bytes each rank really writes for a collective on gloo, torch's CPU backend.

NCCL's ring (app.calc.comm) is what the payload must move at best; gloo sends differently for
two collectives, which the demos measure from /proc/self/io (../shared/research/feasibility.md
section 1, one 16 MiB collective at 2 and 4 ranks):

- all-reduce, all-gather, all-to-all: the ring volumes, 2(N-1)/N * S, (N-1)/N * S and
  (N-1)/N * S per rank;
- reduce-scatter: ProcessGroupGloo runs `_reduce_scatter_base_` as a full all-reduce of the
  input and keeps its own chunk (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp; the Flight
  Recorder logs it as `gloo:all_reduce`), so each rank writes 2(N-1)/N * S, twice the ring;
- broadcast: a binomial tree from the root (gloo/broadcast.cc): the rank v places from the root
  (v = (rank - root) mod N) sends S to v + 2^k for each k with 2^k > v and v + 2^k < N. The root
  sends ceil(log2 N) copies, leaves send none; the total is (N-1) * S, as in a ring.

Protocol headers add a few hundred bytes per call on top of these figures.
"""

from __future__ import annotations

from app.calc.comm import Collective, ring_bytes_per_rank


def binomial_tree_sends(rank: int, ranks: int, root: int = 0) -> int:
    """How many copies of the buffer `rank` forwards in a binomial-tree broadcast."""
    if ranks < 1 or not 0 <= rank < ranks or not 0 <= root < ranks:
        raise ValueError("need ranks >= 1 and 0 <= rank, root < ranks")
    place = (rank - root) % ranks
    sends, step = 0, 1
    while place + step < ranks:
        if step > place:
            sends += 1
        step *= 2
    return sends


def gloo_bytes_per_rank(
    kind: Collective, payload_bytes: int, ranks: int, rank: int, root: int = 0
) -> float:
    """Bytes `rank` writes for one collective of S = `payload_bytes` (nccl-tests' S) on gloo."""
    kind = Collective(kind)
    if kind == Collective.BROADCAST:
        return float(binomial_tree_sends(rank, ranks, root) * payload_bytes)
    if kind == Collective.REDUCE_SCATTER:
        return ring_bytes_per_rank(Collective.ALL_REDUCE, payload_bytes, ranks)
    return ring_bytes_per_rank(kind, payload_bytes, ranks)
