"""The demo line as the routes use it: one line in the database that every web process shares
(app/live/queue_store.py), in front of a pool of workers (app/live/worker_pool.py).

Its rules are app/live/queue_rules.py's. Here, what a stream does with a place:
- `place` joins the line (or raises QueueBusy) and leaves it when the block ends, whatever
  ends it; while it is held, this process renews its heartbeat;
- `turns` polls the line every `poll_s` (no process can wake another's waiters), yields how
  many runs are ahead whenever that changes, and ends when the run has started on a worker:
  when it may start (queue_rules.may_start), it asks the pool for a free worker that answers
  and takes it in a transaction that checks the turn and the worker again;
- `until_cancelled` relays a running job's events until the admin's cancel, seen within a
  poll.

Every database call runs off the event loop: a stream's own bookkeeping (its polls, its start
and its leaving) on the line's threads, the rest in the thread pool.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from app.i18n import gettext
from app.live.queue_rules import (
    ADDRESS_COST_S,
    PLACES_PER_ADDRESS,
    WAITING_COST_S,
    Limits,
    Owner,
    QueueBusy,
    QueueEntry,
    busy_workers,
    may_start,
)
from app.live.queue_store import STALE_AFTER_S, QueueStore

# A waiter sees the line move, and a running job the admin's cancel, within this.
POLL_S = 0.3
HEARTBEAT_S = 2.0
# Each is a few milliseconds of one indexed read or write, every POLL_S per stream.
BOOKKEEPING_THREADS = 2

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)


class QueueCancelled(Exception):
    """The admin took this run out of the line before it started."""


class Workers(Protocol):
    """What the line needs of the pool (app/live/worker_pool.py WorkerPool)."""

    addresses: Sequence[str]

    async def choose(self, busy: Collection[str]) -> str | None: ...


def _process_name() -> str:
    # A nonce besides the pid: two queues in one process (tests) are two holders.
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(3)}"


class SharedQueue:
    def __init__(
        self,
        engine: Engine,
        workers: Workers,
        max_waiting: int,
        per_address: int = PLACES_PER_ADDRESS,
        address_cost_s: float = ADDRESS_COST_S,
        waiting_cost_s: float = WAITING_COST_S,
        poll_s: float = POLL_S,
        heartbeat_s: float = HEARTBEAT_S,
        stale_after_s: float = STALE_AFTER_S,
        heartbeat_engine: Engine | None = None,
    ) -> None:
        """`heartbeat_engine`: connections of its own for the renewals (app/db.py
        engine_beside), which then wait for neither the shared pool nor the thread pool: on a
        server so loaded that requests wait seconds for both, renewals that waited with them
        went stale and the line dropped runs still waiting their turn."""
        self.workers = workers
        self.poll_s = poll_s
        self.heartbeat_s = heartbeat_s
        limits = Limits(max_waiting, per_address, address_cost_s, waiting_cost_s)
        self.store = QueueStore(
            engine, limits, _process_name(), stale_after_s, heartbeat_engine=heartbeat_engine
        )
        # One thread of the renewals' own, made on the first renewal.
        self._renewer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="demo-line-renewer")
        # The polls, starts and leavings of the runs this process streams, on threads of their
        # own: in the thread pool they queued behind every page waiting there, seconds each on
        # a saturated server, and a worker stayed taken until its run's leaving came through.
        self._bookkeeper = ThreadPoolExecutor(
            max_workers=BOOKKEEPING_THREADS, thread_name_prefix="demo-line"
        )
        self._held: set[int] = set()  # ids of the entries this process holds
        self._heartbeats: asyncio.Task[None] | None = None
        self._finishing: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        """Lets the line's threads go (the app's shutdown)."""
        self._renewer.shutdown(wait=False, cancel_futures=True)
        self._bookkeeper.shutdown(wait=False, cancel_futures=True)

    async def _keep_books(self, change: Callable[..., R], *args: object) -> R:
        call = functools.partial(change, *args)
        return await asyncio.get_running_loop().run_in_executor(self._bookkeeper, call)

    async def entries(self) -> list[QueueEntry]:
        """The running runs first, then the waiting ones in the order they will run."""
        return await run_in_threadpool(self.store.line)

    async def busy_workers(self) -> set[str]:
        return busy_workers(await self.entries())

    async def check(self, owner: Owner, cost_s: float) -> None:
        """Raises QueueBusy if `owner` could not get a place now for a run of `cost_s`."""
        await run_in_threadpool(self.store.check, owner, cost_s)

    async def cancel(self, entry_id: int) -> QueueEntry | None:
        """The admin's cancel: a waiting entry leaves the line now; a running one is flagged,
        and its stream stops the job (`until_cancelled`) and then leaves."""
        return await run_in_threadpool(self.store.cancel, entry_id)

    @asynccontextmanager
    async def place(self, owner: Owner, demo: str, cost_s: float) -> AsyncIterator[QueueEntry]:
        """A place in the line (QueueBusy if there is none) until the block ends; wait for
        the turn with `turns`."""
        entry = await run_in_threadpool(self.store.join, owner, demo, cost_s)
        self._held.add(entry.id)
        self._keep_renewing()
        try:
            yield entry
        finally:
            self._held.discard(entry.id)
            await self._finish(self.store.leave, entry.id)

    async def turns(self, entry: QueueEntry) -> AsyncIterator[int]:
        """Yields how many runs are ahead of `entry` whenever that changes; ends once it runs
        (`entry.worker` says where). Raises QueueCancelled if the admin cancels it first, and
        WorkerUnavailable (app/live/worker_client.py) if no worker answers when its turn comes
        and none is busy, which would free up."""
        shown = None
        while True:
            line, now = await self._keep_books(self.store.view, entry.id)
            if now is None:
                raise QueueBusy(gettext("this run lost its place in the line; run it again"))
            if now.cancelled:
                entry.cancelled = True
                raise QueueCancelled
            if may_start(line, entry.id, self.workers.addresses):
                worker = await self.workers.choose(busy_workers(line))
                if worker is not None and await self._keep_books(
                    self.store.start, entry.id, worker, self.workers.addresses
                ):
                    entry.running, entry.worker = True, worker
                    return
            ahead = next((n for n, other in enumerate(line) if other.id == entry.id), len(line))
            if ahead != shown:
                shown = ahead
                yield ahead
            await asyncio.sleep(self.poll_s)

    async def until_cancelled(
        self, entry: QueueEntry, events: AsyncIterator[T]
    ) -> AsyncIterator[T]:
        """`events` until the admin cancels `entry`. The next event is raced against the
        cancel, so a run stuck between two events stops within a poll; the caller then closes
        `events`."""
        cancelled = asyncio.ensure_future(self._cancelled(entry))
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

    async def _cancelled(self, entry: QueueEntry) -> None:
        while not await self._keep_books(self.store.is_cancelled, entry.id):
            await asyncio.sleep(self.poll_s)
        entry.cancelled = True

    async def _finish(self, change: Callable[[int], None], entry_id: int) -> None:
        """`change(entry_id)` on the line's threads, carried to its end even if the caller is
        cancelled meanwhile (a page closed mid-run): its own task, which the caller waits for
        unless it is cancelled again."""
        task = asyncio.ensure_future(self._keep_books(change, entry_id))
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)
        await asyncio.shield(task)

    def _keep_renewing(self) -> None:
        running = self._heartbeats
        loop = asyncio.get_running_loop()
        if running is None or running.done() or running.get_loop() is not loop:
            self._heartbeats = loop.create_task(self._renew())

    async def _renew(self) -> None:
        """Renews the heartbeat of this process's entries while it holds any."""
        while self._held:
            await asyncio.sleep(self.heartbeat_s)
            if not self._held:
                return
            renew = functools.partial(self.store.heartbeat, sorted(self._held))
            try:
                await asyncio.get_running_loop().run_in_executor(self._renewer, renew)
            except SQLAlchemyError:
                # The next beat tries again; only a run of failures longer than the stale
                # bound loses the places.
                log.exception("could not renew the demo line's heartbeats")
