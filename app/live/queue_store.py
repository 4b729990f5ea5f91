"""The demo line in the database, shared by every web process: each change is one transaction.

Blocking calls: from async code, run them in the thread pool (app/live/queue.py does).

One change at a time. Every transaction that changes the line starts by updating the one row
of demoqueuestate. That single statement is the lock, the same on both databases:
- SQLite: a transaction's first write takes the database's write lock, as BEGIN IMMEDIATE
  would (the driver opens the transaction just before that UPDATE), and a second writer waits
  in busy_timeout. Because nothing is read before it, no transaction can have read a line
  that another one changes before it writes;
- PostgreSQL: the UPDATE takes that row's lock (as SELECT ... FOR UPDATE would) until commit,
  and under READ COMMITTED every statement after it sees what the previous holder committed.
So a check and the insert that follows it see the same line in every process: two processes
cannot both take the last place. An advisory lock would do on PostgreSQL but has no SQLite
twin; the row works on both with one code path. Reads that change nothing (a waiter's poll,
the admin's list) take no lock.

A process that dies leaves its rows behind. The process holding a run renews its rows'
heartbeat every few seconds (app/live/queue.py); a row not renewed for `stale_after_s` counts
for nothing (not in the line, not holding a worker) and is deleted by the next change, so the
line never wedges. Clocks of the web hosts must agree to well within that bound (NTP).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlmodel import Session, col, delete, select, update

from app.accounts.models import utc_now
from app.live.models import DemoQueueEntry, DemoQueueState
from app.live.queue_rules import (
    Limits,
    Owner,
    QueueEntry,
    check_place,
    may_start,
    next_round,
    rounds_after_start,
    turn,
)

# Ten missed heartbeats (app/live/queue.py HEARTBEAT_S) and twice SQLite's busy_timeout: a
# slow process is not mistaken for a dead one.
STALE_AFTER_S = 20.0
WAITING, RUNNING = "waiting", "running"
# What an id may be: an Integer column is 32 bits on PostgreSQL.
ENTRY_IDS = range(1, 2**31)

log = logging.getLogger(__name__)


def _entry(row: DemoQueueEntry) -> QueueEntry:
    assert row.id is not None
    return QueueEntry(
        id=row.id,
        demo=row.demo,
        owner=Owner(row.account, row.address, row.user_id),
        cost_s=row.cost_s,
        joined_at=row.joined_at,
        round=row.round,
        running=row.state == RUNNING,
        worker=row.worker,
        cancelled=row.cancelled,
    )


class QueueStore:
    def __init__(
        self,
        engine: Engine,
        limits: Limits,
        process: str,
        stale_after_s: float = STALE_AFTER_S,
        heartbeat_engine: Engine | None = None,
    ) -> None:
        self.engine = engine
        self.heartbeat_engine = heartbeat_engine or engine  # app/live/queue.py says why
        self.limits = limits
        self.process = process  # the name this process's rows carry
        self.stale_after = timedelta(seconds=stale_after_s)

    def _in_line(self, row: DemoQueueEntry, now: datetime) -> bool:
        """A row that counts: renewed lately, and not a waiting run the admin cancelled (that
        one left the line at once; its stream removes the row when it sees the flag)."""
        fresh = row.heartbeat_at >= now - self.stale_after
        return fresh and not (row.cancelled and row.state == WAITING)

    def _line(self, session: Session) -> list[QueueEntry]:
        now = utc_now()
        rows = session.exec(select(DemoQueueEntry)).all()
        return sorted((_entry(row) for row in rows if self._in_line(row, now)), key=turn)

    def line(self) -> list[QueueEntry]:
        """The running runs first, then the waiting ones in the order they will run."""
        with Session(self.engine) as session:
            return self._line(session)

    def view(self, entry_id: int) -> tuple[list[QueueEntry], QueueEntry | None]:
        """The line, and the entry `entry_id` as it is now (cancelled or not; None once its
        row is gone), read together for a waiter's poll."""
        with Session(self.engine) as session:
            row = session.get(DemoQueueEntry, entry_id)
            return self._line(session), _entry(row) if row is not None else None

    def is_cancelled(self, entry_id: int) -> bool:
        with Session(self.engine) as session:
            row = session.get(DemoQueueEntry, entry_id)
            return row is not None and row.cancelled

    def check(self, owner: Owner, cost_s: float) -> None:
        """Raises QueueBusy if `owner` could not get a place now; `join` checks again."""
        check_place(self.line(), owner, cost_s, self.limits)

    @contextmanager
    def _locked(self) -> Iterator[tuple[Session, DemoQueueState]]:
        """A transaction that holds the line's lock (the module's docstring says how), with
        the stale rows already gone."""
        with Session(self.engine) as session, session.begin():
            state_id = col(DemoQueueState.id)
            locked = session.exec(
                update(DemoQueueState).where(state_id == 1).values(round=DemoQueueState.round)
            )
            if locked.rowcount != 1:
                raise RuntimeError("the demoqueuestate row is missing: run the migrations")
            self._drop_stale(session)
            state = session.get_one(DemoQueueState, 1)
            yield session, state

    def _drop_stale(self, session: Session) -> None:
        cutoff = utc_now() - self.stale_after
        stale = col(DemoQueueEntry.heartbeat_at) < cutoff
        for row in session.exec(select(DemoQueueEntry).where(stale)):
            log.warning(
                "dropping %s %s run %s of %s: its process %s stopped renewing it at %s",
                row.state, row.demo, row.id, row.account, row.process, row.heartbeat_at,
            )  # fmt: skip
        session.exec(delete(DemoQueueEntry).where(stale))

    def join(self, owner: Owner, demo: str, cost_s: float) -> QueueEntry:
        """A new waiting entry, or QueueBusy; the check and the insert are one transaction."""
        with self._locked() as (session, state):
            check_place(self._line(session), owner, cost_s, self.limits)
            round_ = next_round(state.round, state.last_rounds, owner.address)
            state.last_rounds = {**state.last_rounds, owner.address: round_}
            now = utc_now()
            row = DemoQueueEntry(
                demo=demo,
                account=owner.account,
                address=owner.address,
                user_id=owner.user_id,
                cost_s=cost_s,
                joined_at=now,
                round=round_,
                heartbeat_at=now,
                process=self.process,
            )
            session.add_all([row, state])
            session.flush()  # assigns the id
            return _entry(row)

    def start(self, entry_id: int, worker: str, workers: Sequence[str]) -> bool:
        """Starts the waiting entry on `worker` if it is still its turn and the worker still
        free (another process may have taken either since the caller looked)."""
        with self._locked() as (session, state):
            line = self._line(session)
            if not may_start(line, entry_id, workers) or any(
                entry.running and entry.worker == worker for entry in line
            ):
                return False
            row = session.get_one(DemoQueueEntry, entry_id)
            row.state, row.worker, row.heartbeat_at = RUNNING, worker, utc_now()
            state.round = max(state.round, row.round)
            state.last_rounds = rounds_after_start(state.last_rounds, state.round)
            session.add_all([row, state])
            return True

    def leave(self, entry_id: int) -> None:
        """The run is over, or its page closed: one DELETE, so no lock is needed."""
        with Session(self.engine) as session, session.begin():
            session.exec(delete(DemoQueueEntry).where(col(DemoQueueEntry.id) == entry_id))

    def cancel(self, entry_id: int) -> QueueEntry | None:
        """The admin's cancel: flags the entry (a waiting one leaves the line at once); None if
        it is not in the line."""
        if entry_id not in ENTRY_IDS:  # from a URL: not an id the column can hold
            return None
        with self._locked() as (session, _state):
            row = session.get(DemoQueueEntry, entry_id)
            if row is None or not self._in_line(row, utc_now()):
                return None
            row.cancelled = True
            session.add(row)
            return _entry(row)

    def heartbeat(self, entry_ids: Sequence[int]) -> None:
        """Renews the rows of runs this process still holds."""
        with Session(self.heartbeat_engine) as session, session.begin():
            session.exec(
                update(DemoQueueEntry)
                .where(col(DemoQueueEntry.id).in_(entry_ids))
                .values(heartbeat_at=utc_now())
            )
