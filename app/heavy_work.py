"""A bound on CPU-heavy requests, so that a few of them cannot hold every other page (issue
#25, finding 1).

The work itself runs in the thread pool, off the event loop, but CPython runs one thread at a
time: every thread that computes takes turns with the event loop, so each one more slows every
other request. Hence at most `slots` heavy requests compute at once (the planner's search, a
progress import or export: see HeavyWorkSlot where routes take it); another waits for a slot
on the event loop, holding no thread, for at most `wait_s`, and is then told to try again
(503 with Retry-After). A line longer than `max_waiting` is refused at once, so a flood of
heavy requests costs the server no more than a few waiting coroutines.

Password hashing (argon2) has its own bound: it runs in C and lets other threads run, but each
hash takes 64 MiB and most of a core, and a flood of log-ins would take every core and a
gigabyte or more.

The calibrator's fits are bounded in app/calculators/calibration_view.py (two at a time,
refused rather than queued, as one can take half a minute).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated

import anyio
from fastapi import Depends, Request
from starlette.exceptions import HTTPException

from app.i18n import gettext
from app.ratelimit import client_address

# The longest a cold search of the largest model takes on one core is about 3 s: a request
# behind one such search gets its slot in time.
HEAVY_WAIT_S = 10.0
HEAVY_MAX_WAITING = 16
# A second tab, or two people behind one router; a third heavy request from one address
# while two are running or waiting is refused at once.
HEAVY_PER_ADDRESS = 2


class ServerBusy(HTTPException):
    """503: every slot is taken and the wait ran out, the line is full, or (`yours`) this
    client address already holds its share of places."""

    def __init__(self, retry_after_s: float, yours: bool = False) -> None:
        if yours:
            detail = gettext(
                "Your earlier heavy requests are still computing: try again when they are done."
            )
        else:
            detail = gettext(
                "The server is busy with other heavy requests just now: try again in a few seconds."
            )
        super().__init__(503, detail, headers={"Retry-After": str(math.ceil(retry_after_s))})


@dataclass(order=True)
class _Waiter:
    turn: int  # how many places the address held when this one joined: fewer go first
    joined: int
    woken: anyio.Event = field(compare=False, default_factory=anyio.Event)


class HeavyWork:
    """At most `slots` holders at once; waiters each wait up to `wait_s`; one client address
    holds at most `per_address` places, running or waiting. A freed slot goes to the waiter
    whose address held the fewest places when it joined, first come first served among
    equals: a visitor's one request waits behind at most what is running, not behind a
    second request of whoever is computing.

    Made in the app's lifespan, on the event loop its waiters run on; no locks needed."""

    def __init__(self, slots: int, wait_s: float, max_waiting: int, per_address: int) -> None:
        self.slots = slots
        self.wait_s = wait_s
        self.max_waiting = max_waiting
        self.per_address = per_address
        self.running = 0
        self._places: Counter[str] = Counter()
        self._line: list[_Waiter] = []  # a heap
        self._joined = itertools.count()

    @property
    def waiting(self) -> int:
        return len(self._line)

    async def acquire(self, address: str) -> None:
        if self._places[address] >= self.per_address:
            raise ServerBusy(self.wait_s, yours=True)
        if self.running < self.slots and not self._line:
            self.running += 1
            self._places[address] += 1
            return
        if len(self._line) >= self.max_waiting:
            raise ServerBusy(self.wait_s)
        waiter = _Waiter(self._places[address], next(self._joined))
        self._places[address] += 1
        heapq.heappush(self._line, waiter)
        try:
            with anyio.move_on_after(self.wait_s):
                await waiter.woken.wait()
        except BaseException:  # the request went away while it waited
            if waiter.woken.is_set():
                self.release(address)  # the slot came as it went: passed on
            else:
                self._drop(waiter, address)
            raise
        if not waiter.woken.is_set():
            self._drop(waiter, address)
            raise ServerBusy(self.wait_s)

    def _drop(self, waiter: _Waiter, address: str) -> None:
        self._line.remove(waiter)
        heapq.heapify(self._line)
        self._leave(address)

    def release(self, address: str) -> None:
        self._leave(address)
        if self._line:
            heapq.heappop(self._line).woken.set()  # the slot passes on: running stays
        else:
            self.running -= 1

    def _leave(self, address: str) -> None:
        self._places[address] -= 1
        if not self._places[address]:
            del self._places[address]


@asynccontextmanager
async def held(work: HeavyWork, address: str) -> AsyncIterator[None]:
    await work.acquire(address)
    try:
        yield
    finally:
        work.release(address)


async def heavy_work_slot(request: Request) -> AsyncIterator[None]:
    async with held(request.app.state.heavy_work, client_address(request)):
        yield


@asynccontextmanager
async def heavy_work_unless(request: Request, cheap: bool) -> AsyncIterator[None]:
    """A heavy-work slot held for the block, unless the route knows its answer is `cheap`
    (the planner's, when the plan is cached): a repeated query never waits behind a search."""
    if cheap:
        yield
        return
    async with held(request.app.state.heavy_work, client_address(request)):
        yield


async def hashing_slot(request: Request) -> AsyncIterator[None]:
    async with held(request.app.state.hashing, client_address(request)):
        yield


# Route parameters for the routes that compute, and the dependency of those that hash: taken
# on the event loop before the route's thread starts, so a waiting request holds no thread.
HeavyWorkSlot = Annotated[None, Depends(heavy_work_slot)]
HASHING = Depends(hashing_slot)
