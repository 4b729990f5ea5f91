"""One demo job on every rank, in step: each rank runs its part, rank 0 judges the rows.

How a job reaches the ranks and why the rows travel as they do: demos/worker.py's docstring.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from demos.specs import DEMO_COLLECTIVES, DEMO_PARAMS
from demos.specs.devices import job_problem

if TYPE_CHECKING:
    from demos.probes import RankInfo

log = logging.getLogger("shardlab.worker")


@dataclass(frozen=True)
class Job:
    job_id: str
    demo: str
    params: dict[str, Any]


def _next_row(steps: Iterator[dict[str, Any]]) -> dict[str, Any] | None:
    """The demo's next row, None when it has finished, or the error it raised."""
    try:
        return next(steps)
    except StopIteration:
        return None
    except Exception as exc:
        log.exception("demo step failed")
        return {"error": f"{type(exc).__name__}: {exc}"}


def _judge(iteration: int, rows: list[dict[str, Any] | None]) -> tuple[str, dict[str, Any]]:
    """Rank 0's verdict on one control step: go on with a measurement, or end the job."""
    errors = [f"rank {r}: {row['error']}" for r, row in enumerate(rows) if row and "error" in row]
    if errors:
        return "failed", {"event": "error", "message": "; ".join(errors)}
    if all(row is None for row in rows):
        return "done", {}
    if any(row is None for row in rows):
        message = "the ranks finished after different numbers of steps (a bug in the demo)"
        return "failed", {"event": "error", "message": message}
    ranks = [{key: value for key, value in row.items() if key != "correct"} for row in rows]
    event = {
        "event": "measurement",
        "iteration": iteration,
        "ranks": ranks,
        "correct": all(row["correct"] for row in rows),
    }
    return "next", event


class JobRunner:
    """Runs one job on this rank, in step with the others."""

    def __init__(self, rank: RankInfo, demos: dict[str, ModuleType]) -> None:
        self.rank = rank
        self.demos = demos

    def execute(self, job: Job, emit: Callable[[dict[str, Any]], bool] | None) -> tuple[str, int]:
        """Rank 0 passes `emit` (False: the client is gone). Returns (outcome, iterations)."""
        import torch.distributed as dist

        demo = self.demos[job.demo]
        params = DEMO_PARAMS[job.demo].model_validate(job.params)
        dist.barrier()
        steps = demo.run(self.rank, params)
        measurements: list[dict[str, Any]] = []
        verdict: list[str | None] = [None]
        try:
            for iteration in itertools.count():
                row = _next_row(steps)
                rows: list[Any] | None = None if emit is None else [None] * self.rank.world_size
                dist.gather_object(row, rows, dst=0)
                if emit is not None and rows is not None:
                    verdict[0], event = _judge(iteration, rows)
                    if event.get("event") == "measurement":
                        measurements.append(event)
                    if event and not emit(event) and verdict[0] == "next":
                        verdict[0] = "cancelled"
                dist.broadcast_object_list(verdict, src=0)
                if verdict[0] != "next":
                    break
        finally:
            steps.close()
        if verdict[0] == "done" and emit is not None:
            try:
                summary = demo.summary(params, self.rank.world_size, measurements)
            except Exception as exc:
                log.exception("summary of job %s failed", job.job_id)
                emit({"event": "error", "message": f"summary failed: {type(exc).__name__}: {exc}"})
                return "failed", len(measurements)
            emit({"event": "done", "summary": summary})
        return str(verdict[0]), len(measurements)

    def problem(self, name: str, params: BaseModel) -> str | None:
        """Why this rank's backend and device cannot run the job, or None (see specs/devices)."""
        rank = self.rank
        return job_problem(name, DEMO_COLLECTIVES[name], params, rank.backend, rank.device.type)

    def warm_up(self) -> None:
        """Run every demo this worker can run once, so a real job pays no first-call costs."""
        emit = (lambda _event: True) if self.rank.rank == 0 else None
        for name, demo in self.demos.items():
            if self.problem(name, DEMO_PARAMS[name].model_validate(demo.WARMUP)) is None:
                self.execute(Job("warm-up", name, demo.WARMUP), emit)


def follow_jobs(runner: JobRunner, store: Any) -> None:
    """Ranks other than 0: wait for each job spec in the store, run it, repeat."""
    for sequence in itertools.count(1):
        job = Job(**json.loads(store.get(f"job/{sequence}")))
        runner.execute(job, None)
