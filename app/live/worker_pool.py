"""The demo workers the app dispatches runs to (SHARDLAB_WORKER_ADDRESSES): each a warm
`python -m demos.worker` or torchrun job on its own host, reached through its own WorkerClient.

A worker runs one job at a time, and the line (app/live/queue.py) knows which workers run one,
in every web process. When a run's turn comes, `choose` takes a free worker that answers:
- the free ones in order: those not marked down first, least recently given a run by this
  process first (so runs spread over the pool and every worker stays warm);
- each is asked its status before it gets the run. One that does not answer (refused, timed
  out, not ready) is skipped and marked down for `down_for_s`, as is one lost mid-run
  (`mark_down`): later runs try the others first;
- a worker marked down is tried again only when no other is free and none is busy: then it is
  the last hope, and a local worker being restarted comes back within the connect timeout.
If every free worker fails and one is busy, the run waits for that one; if none is busy, the
run fails with each worker's reason, as a lost worker does.

Down marks live in each process: every process finds a dead worker for itself, once per
`down_for_s`, at the cost of one probe timeout.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from app.live.worker_client import RETRY_DELAY_S, WorkerClient, WorkerUnavailable

# A probe that has other workers to fall back on waits this long; the last one the full
# connect timeout, since a worker that is starting needs seconds.
PROBE_TIMEOUT_S = 3.0
DOWN_FOR_S = 30.0

log = logging.getLogger(__name__)


@dataclass
class _Seen:
    """What this process last learned of one worker, by the monotonic clock."""

    down_until: float = -math.inf
    started_at: float = -math.inf  # when it was last given a run


class WorkerPool:
    def __init__(
        self,
        addresses: Sequence[str],
        token: str,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 120.0,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        down_for_s: float = DOWN_FOR_S,
    ) -> None:
        if not addresses:
            raise ValueError("a worker pool needs at least one address")
        self.addresses = list(dict.fromkeys(addresses))
        self.connect_timeout_s = connect_timeout_s
        self.probe_timeout_s = probe_timeout_s
        self.down_for_s = down_for_s
        self._clients = {
            address: WorkerClient(address, token, connect_timeout_s, read_timeout_s)
            for address in self.addresses
        }
        self._seen = {address: _Seen() for address in self.addresses}

    def client(self, address: str) -> WorkerClient:
        return self._clients[address]

    def is_down(self, address: str) -> bool:
        return self._seen[address].down_until > time.monotonic()

    def mark_down(self, address: str, reason: str) -> None:
        """Other workers go first for a while: `address` failed to answer, or was lost."""
        log.warning("demo worker %s marked down for %g s: %s", address, self.down_for_s, reason)
        self._seen[address].down_until = time.monotonic() + self.down_for_s

    async def status(self, address: str, timeout_s: float) -> dict[str, Any]:
        """The worker's status once it answers ready within `timeout_s`, else
        WorkerUnavailable. Asked again until then: a worker that is starting may accept a
        connection and drop it, or answer that it is not ready yet."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            remaining_s = max(deadline - loop.time(), RETRY_DELAY_S)
            try:
                status = await self._clients[address].status(timeout_s=remaining_s)
                if status.get("ready"):
                    return status
                problem = WorkerUnavailable(f"the demo worker at {address} is not ready")
            except WorkerUnavailable as exc:
                problem = exc
            if loop.time() + RETRY_DELAY_S >= deadline:
                raise problem
            await asyncio.sleep(RETRY_DELAY_S)

    async def choose(self, busy: Collection[str]) -> str | None:
        """A free worker that answers, for the next run (the module's docstring says which);
        None if there is none but a busy one will free up; WorkerUnavailable if none answers
        and none is busy."""
        free = [address for address in self.addresses if address not in busy]
        order = sorted(free, key=lambda a: (self.is_down(a), self._seen[a].started_at))
        candidates = order if not busy else [a for a in order if not self.is_down(a)]
        reasons = []
        for n, address in enumerate(candidates):
            last_hope = not busy and n == len(candidates) - 1
            timeout_s = self.connect_timeout_s if last_hope else self.probe_timeout_s
            try:
                await self.status(address, timeout_s)
            except WorkerUnavailable as exc:
                self.mark_down(address, str(exc))
                reasons.append(str(exc))
                continue
            self._seen[address].started_at = time.monotonic()
            return address
        if busy:
            return None
        raise WorkerUnavailable("; ".join(reasons))

    async def any_status(self, timeout_s: float) -> dict[str, Any]:
        """The status of whichever worker answers first, all asked at once (a busy one answers
        once its job ends): what a run panel predicts with before the run has a worker. A pool
        should be of like workers; the run's own page follows the worker that runs it."""
        asked = [asyncio.ensure_future(self.status(a, timeout_s)) for a in self.addresses]
        reasons = []
        try:
            for answer in asyncio.as_completed(asked):
                try:
                    return await answer
                except WorkerUnavailable as exc:
                    reasons.append(str(exc))
        finally:
            for probe in asked:
                probe.cancel()
        raise WorkerUnavailable("; ".join(reasons))

    async def health(self, timeout_s: float, busy: Collection[str] = ()) -> dict[str, str]:
        """Per worker, 'ok: N ranks (backend)' or 'unavailable: why', all asked at once. A busy
        worker answers nothing until its job ends, so it is reported running, not asked."""

        async def one(address: str) -> str:
            if address in busy:
                return "ok: running a demo"
            try:
                status = await self.status(address, timeout_s)
            except WorkerUnavailable as exc:
                return f"unavailable: {exc}"
            return f"ok: {status['world_size']} ranks ({status['backend']})"

        answers = await asyncio.gather(*(one(address) for address in self.addresses))
        return dict(zip(self.addresses, answers, strict=True))


def health_summary(workers: dict[str, str]) -> str:
    """One line for /healthz: the worker's own line when there is one, else how many answer."""
    if len(workers) == 1:
        return next(iter(workers.values()))
    answering = sum(state.startswith("ok") for state in workers.values())
    if answering:
        return f"ok: {answering} of {len(workers)} workers answer"
    return f"unavailable: none of {len(workers)} workers answers"
