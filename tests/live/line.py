"""Helpers for the demo line's tests: a migrated database of the test's own, and workers that
always answer (the pool's own probing is tested with real workers in test_worker_pool.py)."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from app.db import migrate
from app.live.queue import SharedQueue
from tests.utils import database_under_test, make_settings

# Fast enough that the tests do not wait on it, slow enough to keep two cores free.
TEST_POLL_S = 0.02


class FreeWorkers:
    """A pool whose every free worker answers: the first free one in address order."""

    def __init__(self, addresses: Sequence[str] = ("w1:1",)) -> None:
        self.addresses = list(addresses)

    async def choose(self, busy: Collection[str]) -> str | None:
        return next((address for address in self.addresses if address not in busy), None)


def database_url(data_dir: Path, migrated_sqlite: Path) -> str:
    """A database at head of `data_dir`'s own: a copy of a migrated SQLite file, or in the
    PostgreSQL pass a database copied from the server's migrated template."""
    settings = make_settings(data_dir)
    if database_under_test() == "sqlite":
        data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(migrated_sqlite, settings.database_path)
    return settings.database_url


def migrated_sqlite_file(directory: Path) -> Path:
    path = directory / "migrated.db"
    migrate(path)
    return path


WAIT_S = 30


async def wait_for(
    queue: SharedQueue,
    count: int,
    running: int | None = None,
    *,
    alongside: asyncio.Task | None = None,
) -> None:
    """Until the line holds `count` entries (`running` of them running, if given), for up to
    WAIT_S: a machine busy with the rest of the suite has taken longer than 5 s to place one.
    A task `alongside` that should be making them and ends first fails the wait with its own
    error."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        entries = await queue.entries()
        if len(entries) == count and running in (None, sum(e.running for e in entries)):
            return
        if alongside is not None and alongside.done():
            raise AssertionError(f"it ended first: {alongside.result()!r}, line {entries}")
        await asyncio.sleep(0.01)
    raise AssertionError(f"the line never held {count} entries ({running} running): {entries}")
