"""Algorithm and bus bandwidth of one collective, as nccl-tests defines them.

nccl-tests doc/PERFORMANCE.md: algbw = S / t, with S the collective's size (the all-reduce
buffer, the reduce-scatter input, the all-gather output, one rank's all-to-all buffer, the
broadcast and reduce buffer, the gathered or scattered buffer) and t its time; busbw = algbw
times the bus factor of app.calc.comm (2(N-1)/N for all-reduce, (N-1)/N for reduce-scatter,
all-gather, all-to-all, gather and scatter, 1 for broadcast and reduce), so that busbw is
comparable with the link's bandwidth whatever the collective.
"""

from __future__ import annotations

from app.calc.comm import Collective, ring_factor


def algbw_bytes_per_s(payload_bytes: int, time_s: float) -> float:
    if time_s <= 0:
        raise ValueError("time_s must be positive")
    return payload_bytes / time_s


def busbw_bytes_per_s(kind: Collective, payload_bytes: int, ranks: int, time_s: float) -> float:
    return algbw_bytes_per_s(payload_bytes, time_s) * float(ring_factor(Collective(kind), ranks))


def slowest_rank_median_s(times_by_rank: list[list[float]]) -> float:
    """A collective's time over several runs: each run lasts until its slowest rank is done
    (nccl-tests reports the maximum over ranks), and the median run stands for the size."""
    runs = sorted(max(run) for run in zip(*times_by_rank, strict=True))
    middle = len(runs) // 2
    return runs[middle] if len(runs) % 2 else (runs[middle - 1] + runs[middle]) / 2
