"""Parameters of the pipeline-schedules demo, which schedules a world size can run, and how
its per-rank rows read back (torch-free, so the worker and the page share them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.calc.messages import N_, Message
from app.calc.pipeline import SCHEDULES, Block, PipelineSetup, Schedule, schedule_problems

# Every schedule runs the same model: 2 chunks of LAYERS_PER_CHUNK Linear layers per rank.
# GPipe, 1F1B and ZB-H1 give each rank both of its chunks as one stage; interleaved 1F1B
# runs them as two virtual stages (chunk c of rank r is virtual stage c p + r).
CHUNKS_PER_RANK = 2
LAYERS_PER_CHUNK = 2


class PipelineSchedulesParams(BaseModel):
    """One training step of a stack of Linear layers pipelined over every rank, per schedule."""

    model_config = ConfigDict(extra="forbid")

    schedule: Annotated[
        Literal["all", "gpipe", "1f1b", "interleaved", "zb-h1"],
        Field(description="One schedule, or all four one after the other."),
    ] = "all"
    compute: Annotated[
        Literal["fixed", "real"],
        Field(
            description="fixed: each forward and backward sleeps a set time, so the schedule's "
            "shape shows; real: only the matmuls, dominated by overhead on a small CPU box."
        ),
    ] = "fixed"
    microbatches: Annotated[
        int, Field(ge=1, le=12, description="Micro-batches per step, m (1 to 12).")
    ] = 8
    forward_ms: Annotated[
        float,
        Field(
            ge=1,
            le=25,
            description="Fixed mode: forward time per micro-batch per stage, ms (1 to 25).",
        ),
    ] = 20.0
    backward_ms: Annotated[
        float,
        Field(
            ge=2,
            le=50,
            description="Fixed mode: backward time per micro-batch per stage, "
            "ms (2 to 50), half input gradient (B), half weight gradient (W).",
        ),
    ] = 40.0
    hidden: Annotated[
        int, Field(ge=8, le=512, description="Width of every Linear layer (8 to 512).")
    ] = 128
    microbatch_size: Annotated[
        int, Field(ge=1, le=64, description="Rows per micro-batch (1 to 64).")
    ] = 16

    @property
    def schedules(self) -> tuple[Schedule, ...]:
        return SCHEDULES if self.schedule == "all" else (self.schedule,)

    def setup(self, schedule: Schedule, world_size: int) -> PipelineSetup:
        """The simulator's set-up for this run: p = world size, the fixed mode's times in ms."""
        half = self.backward_ms / 2
        return PipelineSetup(
            schedule,
            stages=world_size,
            microbatches=self.microbatches,
            chunks=CHUNKS_PER_RANK,
            t_f=self.forward_ms,
            t_b=half,
            t_w=half,
        )

    def problems(self, schedule: Schedule, world_size: int) -> list[Message]:
        """Why this schedule cannot run on this many ranks; empty when it can."""
        found = schedule_problems(self.setup(schedule, world_size))
        if schedule in ("1f1b", "zb-h1") and self.microbatches < world_size:
            # torch's Schedule1F1B refuses it, and ZB-H1's closed form assumes it.
            template = N_("1F1B and ZB-H1 need at least as many micro-batches as stages")
            found.append(Message(template))
        rounds = max(1, self.microbatches // world_size)
        if schedule == "zb-h1" and self.microbatches % rounds:
            # torch 2.13's ScheduleInterleavedZeroBubble, which runs ZB-H1 here, splits the
            # micro-batches into m // p rounds of equal size and refuses any other m
            # (torch/distributed/pipelining/schedules.py:3046-3048).
            template = N_(
                "torch's ZB-H1 runs the micro-batches in %(rounds)s equal rounds "
                "(m // p), so m must be a multiple of %(rounds)s"
            )
            found.append(Message(template, rounds=rounds))
        return found

    @property
    def activation_bytes(self) -> int:
        """One micro-batch's activation (or its gradient) between two stages, float32."""
        return self.microbatch_size * self.hidden * 4


PARAMS = PipelineSchedulesParams
COLLECTIVES = ("send", "recv")
# One rank is one stage: no sends, no bubble to measure.
MIN_RANKS = 2


def timeline_blocks(ranks: list[dict[str, Any]]) -> list[list[Block]]:
    """The ranks' action logs of one measurement as the simulator's blocks, rank by rank."""
    return [
        [
            Block(r["rank"], kind, mb, chunk, start, end)
            for kind, mb, chunk, start, end in r["actions"]
        ]
        for r in sorted(ranks, key=lambda r: r["rank"])
    ]


def p2p_count(row: dict[str, Any], kind: str) -> tuple[int, int]:
    """(count, payload bytes) of one rank's `send` or `recv` ops in a measurement row."""
    found = [c for c in row["collectives"] if c["kind"] == kind]
    return (found[0]["count"], found[0]["payload_bytes"]) if found else (0, 0)
