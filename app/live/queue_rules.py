"""The demo line's fairness rules, on a plain list of its entries: who may join, in what
order runs take their turns, and when a waiting run may start on a free worker.

The line stands in front of the workers: each runs one job at a time, and a bounded, fair line
waits. Keeping the line in the app lets a page say "busy" at once instead of letting
connections pile up in a socket backlog, and lets the line be shared fairly. Before, each
account held one place and nothing else was bounded, so a few accounts from one address filled
the line with eight runs of up to 94 s each and everyone else was told "busy" for about 14
minutes (issue #25, "Demo lockout"). Now:

- a place belongs to an account (a signed-in user, else the anonymous session, else the
  address) and to the client address; an account holds one place, an address
  PLACES_PER_ADDRESS (2: a second tab, or two people behind one router);
- each run is charged its estimated cost in seconds (app/live/job_cost.py); an address
  may hold ADDRESS_COST_S (120 s: one run of the slowest demo at its bounds, 95.4 s, and a
  small one) and the waiting runs together WAITING_COST_S (300 s: whoever gets a place starts
  within five minutes plus the running jobs, where eight 94 s runs made 12.5). A run alone
  always fits, so every run the specs allow can run;
- `max_waiting` (SHARDLAB_DEMO_QUEUE_MAX) still bounds how many wait;
- turns go round-robin by address: each run gets a round, one after its address's previous
  run and none before the one that started last; rounds run in order, first come, first
  served within one. So an address's second run waits behind the first run of every other
  address, even of those that join after it;
- with a pool of workers, the first k waiting runs in turn order may start when k workers are
  free (app/live/worker_pool.py picks which);
- the admin sees every entry and may cancel one (app/admin/router.py).

Where the entries live and how changes stay one at a time: app/live/queue_store.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.i18n import gettext

PLACES_PER_ADDRESS = 2
ADDRESS_COST_S = 120.0
WAITING_COST_S = 300.0


class QueueBusy(Exception):
    """No place in the line for this job; the message says why, for the page."""


@dataclass(frozen=True)
class Owner:
    """Who a place belongs to: `account` holds one place, `address` a few."""

    account: str  # "user:<id>", "session:<digest>", or "address:<address>" without a session
    address: str
    user_id: int | None = None  # for the admin's list; None: anonymous


@dataclass(frozen=True)
class Limits:
    max_waiting: int
    per_address: int = PLACES_PER_ADDRESS
    address_cost_s: float = ADDRESS_COST_S
    waiting_cost_s: float = WAITING_COST_S


@dataclass(eq=False)
class QueueEntry:
    """One run in the line, as read from the database. The copy a stream holds is updated as
    its run starts (`running`, `worker`) and when the admin cancels it (`cancelled`)."""

    id: int
    demo: str
    owner: Owner
    cost_s: float
    joined_at: datetime
    round: int
    running: bool = False
    worker: str | None = None  # host:port of the worker it runs on
    cancelled: bool = False


def turn(entry: QueueEntry) -> tuple[bool, int, int]:
    """The running runs first, then the waiting ones in the order they will run."""
    return (not entry.running, entry.round, entry.id)


def check_place(held: Sequence[QueueEntry], owner: Owner, cost_s: float, limits: Limits) -> None:
    """Raises QueueBusy if `owner` could not get a place beside `held` for a run of `cost_s`."""
    if any(entry.owner.account == owner.account for entry in held):
        raise QueueBusy(
            gettext(
                "you already have a demo running or waiting; let it finish (or close its "
                "page) before starting another"
            )
        )
    from_address = [entry for entry in held if entry.owner.address == owner.address]
    if len(from_address) >= limits.per_address:
        raise QueueBusy(
            gettext(
                "%(places)s demo runs from your address are already running or waiting; "
                "let one finish before starting another"
            )
            % {"places": len(from_address)}
        )
    address_cost_s = sum(entry.cost_s for entry in from_address) + cost_s
    if from_address and address_cost_s > limits.address_cost_s:
        raise QueueBusy(
            gettext(
                "this run would bring the demo work from your address to about "
                "%(seconds)s s, over the %(most)s s one address may hold; let a run finish "
                "or choose smaller parameters"
            )
            % {"seconds": math.ceil(address_cost_s), "most": round(limits.address_cost_s)}
        )
    waiting = [entry for entry in held if not entry.running]
    if len(waiting) >= limits.max_waiting:
        raise QueueBusy(
            gettext(
                "the demo worker is busy: %(waiting)s run(s) are already waiting; try again "
                "in a minute"
            )
            % {"waiting": len(waiting)}
        )
    waiting_cost_s = sum(entry.cost_s for entry in waiting)
    if waiting and waiting_cost_s + cost_s > limits.waiting_cost_s:
        raise QueueBusy(
            gettext(
                "the demo worker is busy: about %(seconds)s s of runs are already waiting; "
                "try again in a few minutes"
            )
            % {"seconds": math.ceil(waiting_cost_s)}
        )


def next_round(round_: int, last_rounds: dict[str, int], address: str) -> int:
    """A new run's round: after its address's latest run, and none before the running one's."""
    return max(round_, last_rounds.get(address, -1) + 1)


def rounds_after_start(last_rounds: dict[str, int], round_: int) -> dict[str, int]:
    """Once a run of `round_` starts, an address whose latest round is behind it starts its
    next run in this one: only the rounds not behind it are kept."""
    return {address: latest for address, latest in last_rounds.items() if latest >= round_}


def busy_workers(line: Iterable[QueueEntry]) -> set[str]:
    return {entry.worker for entry in line if entry.running and entry.worker is not None}


def may_start(line: Sequence[QueueEntry], entry_id: int, workers: Sequence[str]) -> bool:
    """Whether the waiting run `entry_id` of `line` (in turn order) may take a free worker
    now: with k of `workers` free, the first k waiting runs may."""
    free = len([worker for worker in workers if worker not in busy_workers(line)])
    waiting = [entry.id for entry in line if not entry.running]
    return entry_id in waiting and waiting.index(entry_id) < free
