"""The line in front of the worker: one job runs at a time, a bounded, fair line waits.

The worker itself runs jobs one after the other; keeping the line here, in the app, lets a
page say "busy" at once instead of letting connections pile up in a socket backlog, and lets
the line be shared fairly. Before, each account held one place and nothing else was bounded,
so a few accounts from one address filled the line with eight runs of up to 94 s each and
everyone else was told "busy" for about 14 minutes (issue #25, "Demo lockout"). Now:

- a place belongs to an account (a signed-in user, else the anonymous session, else the
  address) and to the client address; an account holds one place, an address
  PLACES_PER_ADDRESS (2: a second tab, or two people behind one router);
- each run is charged its estimated cost in seconds (app/live/job_cost.py); an address
  may hold ADDRESS_COST_S (120 s: one run of the slowest demo at its bounds, 95.4 s, and a
  small one) and the waiting runs together WAITING_COST_S (300 s: whoever gets a place starts
  within five minutes plus the running job, where eight 94 s runs made 12.5). A run alone
  always fits, so every run the specs allow can run;
- `max_waiting` (SHARDLAB_DEMO_QUEUE_MAX) still bounds how many wait;
- turns go round-robin by address: each run gets a round, one after its address's previous
  run and none before the running one's; rounds run in order, first come, first served
  within one. So an address's second run waits behind the first run of every other address,
  even of those that join after it;
- the admin sees every entry and may cancel one (app/admin/router.py).

Everything here runs on the event loop (the admin's cancel is an async route): no locks.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from app.i18n import gettext

PLACES_PER_ADDRESS = 2
ADDRESS_COST_S = 120.0
WAITING_COST_S = 300.0

T = TypeVar("T")


class QueueBusy(Exception):
    """No place in the line for this job; the message says why, for the page."""


class QueueCancelled(Exception):
    """The admin took this run out of the line before it started."""


@dataclass(frozen=True)
class Owner:
    """Who a place belongs to: `account` holds one place, `address` a few."""

    account: str  # "user:<id>", "session:<digest>", or "address:<address>" without a session
    address: str
    user_id: int | None = None  # for the admin's list; None: anonymous


@dataclass(eq=False)
class QueueEntry:
    id: int
    demo: str
    owner: Owner
    cost_s: float
    joined_at: datetime
    round: int
    running: bool = False
    # Set by the admin: a waiting entry leaves the line, a running one stops its job.
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


class JobQueue:
    def __init__(
        self,
        max_waiting: int,
        per_address: int = PLACES_PER_ADDRESS,
        address_cost_s: float = ADDRESS_COST_S,
        waiting_cost_s: float = WAITING_COST_S,
    ) -> None:
        self.max_waiting = max_waiting
        self.per_address = per_address
        self.address_cost_s = address_cost_s
        self.waiting_cost_s = waiting_cost_s
        self._held: list[QueueEntry] = []  # in the order they joined; at most one running
        self._ids = itertools.count(1)
        self._round = 0  # of the run that started last
        # Per address, the round of its latest run, while that is not behind `_round`.
        self._last_rounds: dict[str, int] = {}
        # Set, then replaced, on every change: waiters wake to re-read their place.
        self._changed = asyncio.Event()

    @property
    def entries(self) -> list[QueueEntry]:
        """The running entry first, then the waiting ones in the order they will run."""
        return sorted(self._held, key=self._turn)

    @property
    def waiting(self) -> int:
        return sum(not entry.running for entry in self._held)

    @property
    def running(self) -> bool:
        return any(entry.running for entry in self._held)

    @staticmethod
    def _turn(entry: QueueEntry) -> tuple[bool, int, int]:
        return (not entry.running, entry.round, entry.id)

    def check(self, owner: Owner, cost_s: float) -> None:
        """Raises QueueBusy if `owner` could not get a place now for a run of `cost_s`."""
        if any(entry.owner.account == owner.account for entry in self._held):
            raise QueueBusy(
                gettext(
                    "you already have a demo running or waiting; let it finish (or close its "
                    "page) before starting another"
                )
            )
        from_address = [entry for entry in self._held if entry.owner.address == owner.address]
        if len(from_address) >= self.per_address:
            raise QueueBusy(
                gettext(
                    "%(places)s demo runs from your address are already running or waiting; "
                    "let one finish before starting another"
                )
                % {"places": len(from_address)}
            )
        address_cost_s = sum(entry.cost_s for entry in from_address) + cost_s
        if from_address and address_cost_s > self.address_cost_s:
            raise QueueBusy(
                gettext(
                    "this run would bring the demo work from your address to about "
                    "%(seconds)s s, over the %(most)s s one address may hold; let a run finish "
                    "or choose smaller parameters"
                )
                % {"seconds": math.ceil(address_cost_s), "most": round(self.address_cost_s)}
            )
        waiting = [entry for entry in self._held if not entry.running]
        if len(waiting) >= self.max_waiting:
            raise QueueBusy(
                gettext(
                    "the demo worker is busy: %(waiting)s run(s) are already waiting; try again "
                    "in a minute"
                )
                % {"waiting": len(waiting)}
            )
        waiting_cost_s = sum(entry.cost_s for entry in waiting)
        if waiting and waiting_cost_s + cost_s > self.waiting_cost_s:
            raise QueueBusy(
                gettext(
                    "the demo worker is busy: about %(seconds)s s of runs are already waiting; "
                    "try again in a few minutes"
                )
                % {"seconds": math.ceil(waiting_cost_s)}
            )

    @asynccontextmanager
    async def place(self, owner: Owner, demo: str, cost_s: float) -> AsyncIterator[QueueEntry]:
        """A place in the line (QueueBusy if there is none) until the block ends; wait for
        the turn with `turns`."""
        self.check(owner, cost_s)
        turn = max(self._round, self._last_rounds.get(owner.address, -1) + 1)
        self._last_rounds[owner.address] = turn
        entry = QueueEntry(next(self._ids), demo, owner, cost_s, datetime.now(UTC), turn)
        self._held.append(entry)
        if len(self._held) == 1:
            self._start(entry)
        self._notify()
        try:
            yield entry
        finally:
            self._leave(entry)

    async def turns(self, entry: QueueEntry) -> AsyncIterator[int]:
        """Yields how many runs are ahead of `entry` whenever that changes; ends at its turn.
        Raises QueueCancelled if the admin cancels it first."""
        shown = None
        while True:
            changed = self._changed  # taken first, so a change while we yield is not missed
            if entry.cancelled.is_set():
                raise QueueCancelled
            if entry.running:
                return
            ahead = self.entries.index(entry)
            if ahead != shown:
                shown = ahead
                yield ahead
            await changed.wait()

    def cancel(self, entry_id: int) -> QueueEntry | None:
        """The admin's cancel: a waiting entry leaves the line now; a running one is marked,
        and its stream stops the job (`until_cancelled`) and then leaves."""
        entry = next((entry for entry in self._held if entry.id == entry_id), None)
        if entry is None:
            return None
        entry.cancelled.set()
        if not entry.running:
            self._held.remove(entry)
        self._notify()
        return entry

    def _leave(self, entry: QueueEntry) -> None:
        if entry not in self._held:
            return  # cancelled while waiting
        self._held.remove(entry)
        if entry.running and self._held:
            self._start(self.entries[0])
        self._notify()

    def _start(self, entry: QueueEntry) -> None:
        entry.running = True
        self._round = entry.round
        # An address whose latest round is behind this one starts its next run in this one.
        rounds = self._last_rounds.items()
        self._last_rounds = {address: turn for address, turn in rounds if turn >= self._round}

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


async def until_cancelled(entry: QueueEntry, events: AsyncIterator[T]) -> AsyncIterator[T]:
    """`events` until the admin cancels `entry`. The next event is raced against the cancel,
    so a run stuck between two events stops at once; the caller then closes `events`."""
    cancelled = asyncio.ensure_future(entry.cancelled.wait())
    following: asyncio.Future[T] | None = None
    try:
        while True:
            following = asyncio.ensure_future(anext(events))
            await asyncio.wait({following, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not following.done():
                return
            try:
                event = following.result()
            except StopAsyncIteration:
                return
            yield event
    finally:
        cancelled.cancel()
        if following is not None and not following.done():
            following.cancel()
            await asyncio.wait({following})  # so `events` is idle when the caller closes it
