"""The pipeline-schedules demo's page: each schedule simulated by app.calc.pipeline, and each
measured timeline summarised and drawn by the same functions."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from app.calc.pipeline import (
    SCHEDULE_NAMES,
    ClosedForm,
    Schedule,
    Simulation,
    StageMessages,
    closed_form,
    p2p_messages_per_stage,
    simulate,
    timeline_summary,
)
from app.calculators.pipeline_view import Gantt, gantt
from app.live.demo_page import DemoPage
from demos.specs.pipeline_schedules import PipelineSchedulesParams, p2p_count, timeline_blocks

GANTT_WIDTH = 480.0


@dataclass(frozen=True)
class SchedulePrediction:
    schedule: Schedule
    title: str
    problems: list[str]  # why it cannot run on this many ranks; empty when it can
    simulation: Simulation | None
    closed: ClosedForm | None
    messages: list[StageMessages]


@dataclass(frozen=True)
class MeasuredRank:
    rank: int
    actions: int
    busy_ms: float
    peak_in_flight: float
    predicted_peak: float
    sends: int
    recvs: int
    predicted_sends: int
    send_bytes: int
    wire_bytes: int


@dataclass(frozen=True)
class MeasuredSchedule:
    """One measurement event, summarised and drawn beside its simulation."""

    predicted: SchedulePrediction
    measured: Simulation
    ranks: list[MeasuredRank]
    measured_gantt: Gantt
    predicted_gantt: Gantt
    grad_error: float


@dataclass(frozen=True)
class PipelinePrediction:
    params: PipelineSchedulesParams
    world_size: int

    @cached_property
    def schedules(self) -> list[SchedulePrediction]:
        found = []
        for name in self.params.schedules:
            problems = self.params.problems(name, self.world_size)
            setup = self.params.setup(name, self.world_size)
            found.append(
                SchedulePrediction(
                    schedule=name,
                    title=SCHEDULE_NAMES[name],
                    problems=problems,
                    simulation=None if problems else simulate(setup),
                    closed=None if problems else closed_form(setup),
                    messages=[] if problems else p2p_messages_per_stage(setup),
                )
            )
        return found

    def of(self, name: str) -> SchedulePrediction:
        return next(s for s in self.schedules if s.schedule == name)

    @property
    def activation_bytes(self) -> int:
        return self.params.activation_bytes

    def measured(self, event: dict[str, Any]) -> MeasuredSchedule:
        """The measured timeline as the simulator's blocks, summarised by app.calc."""
        ranks = sorted(event["ranks"], key=lambda r: r["rank"])
        predicted = self.of(ranks[0]["schedule"])
        assert predicted.simulation is not None
        measured = timeline_summary(predicted.simulation.setup, timeline_blocks(ranks))
        span = max(measured.total_time, predicted.simulation.total_time)
        rows = [
            MeasuredRank(
                rank=r["rank"],
                actions=len(r["actions"]),
                busy_ms=sum(b.end - b.start for b in measured.timeline[i]),
                peak_in_flight=measured.peak_in_flight[i],
                predicted_peak=predicted.simulation.peak_in_flight[i],
                sends=p2p_count(r, "send")[0],
                recvs=p2p_count(r, "recv")[0],
                predicted_sends=predicted.messages[i].sends,
                send_bytes=p2p_count(r, "send")[1],
                wire_bytes=r["wire_bytes"],
            )
            for i, r in enumerate(ranks)
        ]
        row_height = max(8.0, min(18.0, 160 / self.world_size))
        return MeasuredSchedule(
            predicted=predicted,
            measured=measured,
            ranks=rows,
            measured_gantt=gantt(measured, row_height, "Measured", GANTT_WIDTH, span),
            predicted_gantt=gantt(predicted.simulation, row_height, "Simulated", GANTT_WIDTH, span),
            grad_error=max(r["grad_error"] for r in ranks),
        )


PAGE = DemoPage(
    demo="pipeline_schedules",
    slug="pipeline-schedules",
    title="Pipeline schedules on real ranks",
    teaches="GPipe, 1F1B, interleaved 1F1B and ZB-H1 with torch.distributed.pipelining: "
    "each rank's measured timeline beside the simulator's, and the bubble beside (p−1)/(m+p−1).",
    cards=("pipeline-bubble", "zero-bubble-schedules"),
    params=PipelineSchedulesParams,
    labels={
        "schedule": "Schedule",
        "compute": "Compute",
        "microbatches": "Micro-batches",
        "forward_ms": "Forward time (ms)",
        "backward_ms": "Backward time (ms)",
        "hidden": "Layer width",
        "microbatch_size": "Rows per micro-batch",
    },
    predict=PipelinePrediction,
    passes="sends, receives and wire bytes from a counted step, probes on; the timeline, step "
    "time and bubble from the next step, clean (each action timed by the clock alone).",
)
