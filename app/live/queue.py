"""The line in front of the worker: one job runs at a time, a bounded number wait in order.

The worker itself runs jobs one after the other; keeping the line here, in the app, lets a
page say "busy" at once instead of letting connections pile up in a socket backlog, and lets
each person hold at most one place in it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.i18n import gettext


class QueueBusy(Exception):
    """No place in the line for this job; the message says why, for the page."""


class JobQueue:
    def __init__(self, max_waiting: int, per_owner: int = 1) -> None:
        self.max_waiting = max_waiting
        self.per_owner = per_owner
        # asyncio.Lock wakes its waiters first come, first served.
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._owners: Counter[str] = Counter()

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def running(self) -> bool:
        return self._lock.locked()

    def check(self, owner: str) -> None:
        """Raises QueueBusy if `owner` could not get a place now."""
        if self._owners[owner] >= self.per_owner:
            raise QueueBusy(
                gettext(
                    "you already have a demo running or waiting; let it finish (or close its "
                    "page) before starting another"
                )
            )
        if self._waiting >= self.max_waiting:
            raise QueueBusy(
                gettext(
                    "the demo worker is busy: %(waiting)s run(s) are already waiting; try again "
                    "in a minute"
                )
                % {"waiting": self._waiting}
            )

    @asynccontextmanager
    async def place(self, owner: str) -> AsyncIterator[int]:
        """Waits for the worker; yields how many runs were ahead when this one joined."""
        self.check(owner)
        ahead = self._waiting + (1 if self.running else 0)
        self._owners[owner] += 1
        self._waiting += 1
        try:
            try:
                await self._lock.acquire()
            finally:
                self._waiting -= 1
            try:
                yield ahead
            finally:
                self._lock.release()
        finally:
            self._owners[owner] -= 1
            if not self._owners[owner]:
                del self._owners[owner]
