"""The ranking of a plan's layouts and its Pareto front, on numpy arrays of every layout's step
time and memory."""

from __future__ import annotations

import numpy as np

# Layouts rank by step time to the microsecond (rounded_to_us), a tie won by the smaller
# memory (otherwise the "best" of a tie could sit off the Pareto front: same time, more
# memory), a full tie by search order. Neither function sorts every layout.


def _fastest(rounded: np.ndarray, memory: np.ndarray, top: int) -> np.ndarray:
    """Indices of the `top` first layouts in rank order."""
    if len(rounded) > top:
        # every layout as fast as the top-th or faster, ties included
        (candidates,) = np.nonzero(rounded <= np.partition(rounded, top - 1)[top - 1])
    else:
        candidates = np.arange(len(rounded))
    order = np.lexsort((candidates, memory[candidates], rounded[candidates]))
    return candidates[order[:top]]


def _pareto(rounded: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """Indices of the Pareto front in rank order: each layout with less memory than every
    layout before it in rank order.

    Only the first in rank order of each step time can be on it: the least memory of that
    time, the first in search order among equals. It is, if its memory is less than that of
    every faster time's first.
    """
    if not len(rounded):
        return np.empty(0, int)
    by_time = np.argsort(rounded)
    times, memories = rounded[by_time], memory[by_time]
    starts = np.flatnonzero(np.r_[True, times[1:] != times[:-1]])
    least = np.minimum.reduceat(memories, starts)
    size = np.diff(np.r_[starts, len(times)])
    is_least = memories == np.repeat(least, size)
    first = np.minimum.reduceat(np.where(is_least, by_time, len(rounded)), starts)
    front = np.r_[True, least[1:] < np.minimum.accumulate(least)[:-1]]
    return first[front]


def rounded_to_us(time_s: np.ndarray) -> np.ndarray:
    """round(t, 6) of each t, to the last bit: a microsecond is a tie in the ranking.

    round() rounds t's exact decimal value; t * 1e6 is rounded once on the way, which moves
    it across a half only where it lies within an ulp of one. Those (and values too large for
    an exact integer, and non-finite ones) are left to round() itself.
    """
    with np.errstate(all="ignore"):
        scaled = time_s * 1e6
        rounded = np.rint(scaled) / 1e6
        off_half = np.abs(scaled - np.floor(scaled) - 0.5)
        doubtful = ~((off_half > 4 * np.abs(np.spacing(scaled))) & (np.abs(scaled) < 2.0**52))
    for i in np.flatnonzero(doubtful):
        rounded[i] = round(float(time_s[i]), 6)
    return rounded
