"""The verdict a demo page leads with: each measured quantity beside its prediction.

A page's `verdict(summary, prediction, backend)` (app/live/demo_page.py) turns the worker's
`done` summary into Checks, and templates/demos/_verdict.html shows one row per Check: ✓ where
measured equals predicted, else Δ (absolute and relative) and why the two differ. A difference
is "explained" when the page knows its cause and the measurement is within what that cause
allows (most often: it equals an exact model of the implementation, where the calculator has the
paper's formula); any other difference is "unexpected" and shown as a fault.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from app.i18n import N_

Status = Literal["equal", "explained", "unexpected"]
# How a figure is shown: bytes; milliseconds; a share of 1; a ratio (× 1.33); a count or a list
# of counts; a label marked with N_().
Unit = Literal["bytes", "ms", "share", "ratio", "count", "text"]
Figure = float | int | str | list[float] | list[int]

GLOO_HEADERS = N_("gloo's message headers, a few hundred bytes per collective")
NCCL_WIRE = N_(
    "NCCL moves its bytes over NVLink or InfiniBand, which a process's written-bytes counter "
    "does not see"
)


@dataclass(frozen=True)
class Check:
    quantity: str  # marked with N_(); the template translates it
    measured: Figure
    predicted: Figure
    status: Status
    unit: Unit = "bytes"
    scope: str = ""  # what it was measured on ("ZeRO-1", "all-gather, 1 MiB"): a name or N_()
    reason: str = ""  # marked with N_(): why an explained difference is there

    @property
    def measured_runs(self) -> list[tuple[float, int] | None]:
        return runs(self.measured) if isinstance(self.measured, list) else []

    @property
    def predicted_runs(self) -> list[tuple[float, int] | None]:
        return runs(self.predicted) if isinstance(self.predicted, list) else []

    @property
    def delta(self) -> float | None:
        """measured − predicted, where both are numbers."""
        if not _number(self.measured) or not _number(self.predicted):
            return None
        return float(self.measured) - float(self.predicted)

    @property
    def relative(self) -> float | None:
        """delta as a share of the prediction; None where the prediction is 0."""
        delta = self.delta
        if delta is None or not self.predicted:
            return None
        return delta / float(self.predicted)


def runs(values: list[float] | list[int], most: int = 6) -> list[tuple[float, int] | None]:
    """A figure per rank as runs of equal values, (value, how many; runs of three or more), so it
    stays one short line at 64 ranks: past `most` runs, the first three and the last two, None
    where the rest was."""
    found: list[tuple[float, int]] = []
    for value in values:
        if found and found[-1][0] == value and found[-1][1] >= 2:
            found[-1] = (value, found[-1][1] + 1)
        elif len(found) > 1 and found[-1] == found[-2] == (value, 1):
            found[-2:] = [(value, 3)]
        else:
            found.append((value, 1))
    if len(found) <= most:
        return list(found)
    return [*found[:3], None, *found[-2:]]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check(
    quantity: str,
    measured: Figure,
    predicted: Figure,
    *,
    unit: Unit = "bytes",
    scope: str = "",
    reason: str = "",
    explained: bool = False,
    agrees: bool | None = None,
) -> Check:
    """Equal; else explained by `reason` when `explained`; else unexpected.

    `agrees` overrides the comparison of the two figures where more than they must agree
    (the same bytes from other collectives is still a disagreement)."""
    same = measured == predicted if agrees is None else agrees
    if same:
        return Check(quantity, measured, predicted, "equal", unit, scope)
    status: Status = "explained" if explained else "unexpected"
    return Check(quantity, measured, predicted, status, unit, scope, reason if explained else "")


def gloo_header_allowance_bytes(payload_bytes: float, ranks: int) -> float:
    """How far gloo's wire bytes may exceed its algorithm's for one collective: message headers,
    measured at 48 to 576 B per collective at 2 ranks and up to 3,456 B for 16 MiB at 4 ranks
    (0.02 %)."""
    return 1024 * ranks + payload_bytes / 1000


def wire_check(
    quantity: str,
    measured: float,
    predicted: float,
    allowance_bytes: float,
    backend: str | None,
    scope: str = "",
    reason: str = GLOO_HEADERS,
) -> Check:
    """Wire bytes against what the algorithm sends: on gloo, `reason` (by default its headers)
    explains up to `allowance_bytes` more; NCCL's links bypass the counter, so less is
    explained there."""
    if backend == "nccl":
        explained = measured <= predicted + allowance_bytes
        return check(quantity, measured, predicted, scope=scope, reason=NCCL_WIRE,
                     explained=explained)  # fmt: skip
    explained = predicted <= measured <= predicted + allowance_bytes
    return check(quantity, measured, predicted, scope=scope, reason=reason, explained=explained)


def reason_lines(checks: list[Check]) -> list[int]:
    """Where the verdict's table writes each reason: after the last row of a run of differing
    rows that share it, saying how many rows it covers (0: no reason line after this row)."""
    lines = [0] * len(checks)
    run = 0
    for i, c in enumerate(checks):
        if c.status == "equal":
            run = 0
            continue
        run = run + 1 if run and _why(checks[i - 1]) == _why(c) else 1
        after = checks[i + 1] if i + 1 < len(checks) else None
        if after is None or after.status == "equal" or _why(after) != _why(c):
            lines[i] = run
    return lines


def _why(c: Check) -> tuple[Status, str]:
    return c.status, c.reason


def tally(checks: list[Check]) -> dict[str, int]:
    """How many checks are equal, explained and unexpected (each key present)."""
    counts = Counter(c.status for c in checks)
    return {status: counts.get(status, 0) for status in ("equal", "explained", "unexpected")}
