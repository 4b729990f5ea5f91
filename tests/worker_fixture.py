"""A real demo worker for tests: gloo ranks on a free port with a random token.

A start costs seconds on two cores, so the test directories share one: each session-scoped
fixture enters `shared_test_worker`, the first entry starts it and the last exit stops it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.live.worker_client import WorkerClient
from app.live.worker_process import LocalWorker
from tests.utils import free_port

READY_TIMEOUT_S = 90.0
LOG_TAIL_CHARS = 4000

_shared: tuple[LocalWorker, str, str] | None = None
_users = 0


def start_test_worker(
    tmp_dir: Path, ranks: int = 2, token: str | None = None
) -> tuple[LocalWorker, str, str]:
    """A started, ready worker and the (address, token) to reach it; the caller stops it.
    Workers of one pool share a `token`."""
    address = f"127.0.0.1:{free_port()}"
    token = token or secrets.token_hex(16)
    worker = LocalWorker(address, token, tmp_dir / "worker.log", ranks=ranks, backend="gloo")
    worker.start()
    if not worker.wait_ready(READY_TIMEOUT_S):
        worker.stop()
        log = worker.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
        raise RuntimeError(f"the test worker did not become ready; its log ends:\n{log}")
    return worker, address, token


@contextmanager
def shared_test_worker(tmp_dir: Path) -> Iterator[tuple[LocalWorker, str, str]]:
    global _shared, _users
    if _shared is None:
        _shared = start_test_worker(tmp_dir)
    _users += 1
    try:
        yield _shared
    finally:
        _users -= 1
        if _users == 0:
            _shared[0].stop()
            _shared = None


def run_job(address: str, token: str, demo: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every event of one job, through the app's own client."""

    async def collect() -> list[dict[str, Any]]:
        return [event async for event in WorkerClient(address, token).run(demo, params)]

    return asyncio.run(collect())


def group_processes(pgid: int) -> list[int]:
    """Live (non-zombie) processes in a process group, read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        state, process_group = fields[0], int(fields[2])
        if process_group == pgid and state != "Z":
            members.append(int(stat.parent.name))
    return members
