"""The pipeline-schedules demo's page: each schedule simulated by app.calc.pipeline, and each
measured timeline summarised and drawn by the same functions."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from app.calc.pipeline import (
    SCHEDULE_NAMES,
    ClosedForm,
    PipelineSetup,
    Schedule,
    Simulation,
    StageMessages,
    closed_form,
    p2p_messages_per_stage,
    simulate,
    stage_orders,
    timeline_summary,
)
from app.i18n import N_
from app.live.demo_page import DemoPage
from app.live.verdict import Check, check
from app.worked.pipeline import Gantt, gantt
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

    def setup(self, name: Schedule) -> PipelineSetup:
        """The simulator's set-up for one schedule, in the order torch runs it: the ranks run
        torch's ScheduleInterleaved1F1B, whose order at m = p is not Megatron-LM's."""
        return replace(self.params.setup(name, self.world_size), interleaved_order="torch")

    @cached_property
    def torch_order_differs(self) -> bool:
        """Whether torch's interleaved order here is not the one Megatron-LM (and the
        pipeline calculator) runs, so the page says which one it predicts."""
        if "interleaved" not in self.params.schedules or self.of("interleaved").problems:
            return False
        torch_setup = self.setup("interleaved")
        megatron = replace(torch_setup, interleaved_order="megatron")
        return stage_orders(torch_setup) != stage_orders(megatron)

    @cached_property
    def schedules(self) -> list[SchedulePrediction]:
        found = []
        for name in self.params.schedules:
            problems = self.params.problems(name, self.world_size)
            setup = self.setup(name)
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
            measured_gantt=gantt(measured, row_height, N_("Measured"), GANTT_WIDTH, span),
            predicted_gantt=gantt(
                predicted.simulation, row_height, N_("Simulated"), GANTT_WIDTH, span
            ),
            grad_error=max(r["grad_error"] for r in ranks),
        )


OVERHEAD = N_("each action's overhead: send, receive and Python around every forward and backward")
REAL_COMPUTE = N_(
    "real compute: the matmuls take about a millisecond, so overhead dominates; the simulation "
    "gives the shape only"
)
GRADIENTS = {True: N_("match"), False: N_("differ")}
RUN = {True: N_("run"), False: N_("not run")}
EVERY_SCHEDULE = N_("every schedule")
# The verdict's short names (app.calc.pipeline's SCHEDULE_NAMES describe each schedule).
SHORT_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": N_("Interleaved 1F1B"),
               "zb-h1": "ZB-H1"}  # fmt: skip
AS_SIMULATED = N_("as simulated")
# Overhead only adds idle time and length: sleep-based compute lands above the simulation, never
# below (feasibility §7; tests/demos/test_pipeline_schedules.py), by more as actions get shorter
# (interleaving halves them) and the box gets busier.
BUBBLE_FLOOR = -0.02
STEP_FLOOR = 0.98


def verdict(
    summary: dict[str, Any], prediction: PipelinePrediction, backend: str | None
) -> list[Check]:
    """Per schedule: step time, bubble and messages against the simulator; then the peak in
    flight and the gradients over every schedule."""
    real = prediction.params.compute == "real"
    why = REAL_COMPUTE if real else OVERHEAD
    steps, bubbles, messages, peaks, gradients = [], [], [], [], []
    for s in summary["schedules"]:
        p = prediction.of(s["schedule"])
        assert p.simulation is not None
        sim, scope = p.simulation, SHORT_NAMES[s["schedule"]]
        bubble_off = s["bubble_fraction"] - sim.bubble_fraction_of_total
        steps.append(
            check(N_("Step time"), s["step_ms"], sim.total_time, unit="ms", scope=scope,
                  reason=why, explained=real or s["step_ms"] >= STEP_FLOOR * sim.total_time)
        )  # fmt: skip
        bubbles.append(
            check(N_("Bubble (idle share of rank-time)"), s["bubble_fraction"],
                  sim.bubble_fraction_of_total, unit="share", scope=scope, reason=why,
                  explained=real or bubble_off >= BUBBLE_FLOOR)
        )  # fmt: skip
        messages.append(
            check(N_("Messages sent per rank"), s["sends"], [m.sends for m in p.messages],
                  unit="count", scope=scope)
        )  # fmt: skip
        peaks.append(
            check(N_("Peak micro-batches in flight per rank"), s["peak_in_flight"],
                  sim.peak_in_flight, unit="count", scope=scope)
        )  # fmt: skip
        good = s["grad_error"] <= 1e-6
        gradients.append(
            check(N_("Gradients vs one process"), GRADIENTS[good], GRADIENTS[True], unit="text",
                  scope=scope)
        )  # fmt: skip
    # Rows of one quantity together, so a reason shared by every schedule is written once.
    checks = steps + bubbles + messages
    for name in summary["skipped"]:
        p = prediction.of(name)
        checks.append(check(N_("Schedule"), RUN[False], RUN[not p.problems], unit="text",
                            scope=SHORT_NAMES[name]))  # fmt: skip
    if peaks:
        checks += [_over_every_schedule(peaks, AS_SIMULATED), _over_every_schedule(gradients)]
    return checks


def _over_every_schedule(checks: list[Check], agreed: str | None = None) -> Check:
    """The first schedule that disagrees, else one row for all of them (`agreed`: what that
    row shows as both figures, in place of the first schedule's)."""
    for found in checks:
        if found.status != "equal":
            return found
    first = checks[0]
    if len(checks) == 1:
        return first
    figure, unit = (agreed, "text") if agreed else (first.measured, first.unit)
    return check(first.quantity, figure, figure, unit=unit, scope=EVERY_SCHEDULE)


PAGE = DemoPage(
    demo="pipeline_schedules",
    slug="pipeline-schedules",
    title=N_("Pipeline schedules on real ranks"),
    teaches=N_(
        "GPipe, 1F1B, interleaved 1F1B and ZB-H1 with torch.distributed.pipelining: "
        "each rank's measured timeline beside the simulator's, and the bubble beside (p−1)/(m+p−1)."
    ),
    cards=("pipeline-bubble", "zero-bubble-schedules"),
    params=PipelineSchedulesParams,
    labels={
        "schedule": N_("Schedule"),
        "compute": N_("Compute"),
        "microbatches": N_("Micro-batches"),
        "forward_ms": N_("Forward time (ms)"),
        "backward_ms": N_("Backward time (ms)"),
        "hidden": N_("Layer width"),
        "microbatch_size": N_("Rows per micro-batch"),
    },
    predict=PipelinePrediction,
    verdict=verdict,
    passes=N_(
        "sends, receives and wire bytes from a counted step, probes on; the timeline, step "
        "time and bubble from the next step, clean (each action timed by the clock alone)."
    ),
)
