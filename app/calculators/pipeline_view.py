"""The pipeline-schedule calculator's result as the page shows it: the chosen schedule's Gantt
chart, every schedule's beside it for comparison, and the closed form. Every number comes from
app.calc.pipeline; the charts are drawn by app.worked.pipeline."""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.messages import Message
from app.calc.pipeline import (
    SCHEDULE_NAMES,
    SCHEDULES,
    ClosedForm,
    Simulation,
    closed_form,
    imbalanced_step,
    interleaved_first_stage_in_flight,
    schedule_problems,
    simulate,
)
from app.calc.pipeline_query import PipelineQuery
from app.i18n import gettext, say, translate
from app.worked.pipeline import SMALL_WIDTH, Gantt, gantt


@dataclass(frozen=True)
class PipelineView:
    query: PipelineQuery
    simulation: Simulation
    closed: ClosedForm
    chart: Gantt
    others: list[Gantt]  # every schedule, small, for comparison
    compared: dict[str, Simulation]  # the same schedules' simulations, by name
    notes: list[str]  # schedules the comparison cannot draw, and why
    # Korthikanti's closed form for stage 0, shown beside the simulation (interleaved only)
    interleaved_in_flight: float | None = None
    # Unequal stages: each stage's factor, and GPipe's or 1F1B's step in closed form
    scales: tuple[float, ...] = ()
    imbalanced_step: float | None = None

    @property
    def scales_text(self) -> str:
        """The stage factors as the form takes them: "1, 1, 1, 1.3"."""
        return ", ".join(f"{scale:g}" for scale in self.scales)


def pipeline_view(query: PipelineQuery) -> PipelineView:
    chosen = query.setup(query.schedule)
    sim = simulate(chosen)
    big = max(14.0, min(26.0, 520 / query.pp))
    notes, compared = [], {}
    if query.compare:
        for schedule in SCHEDULES:
            setup = query.setup(schedule)
            problems = schedule_problems(setup)
            if problems:
                note = gettext("%(schedule)s: %(problems)s.") % {
                    "schedule": translate(SCHEDULE_NAMES[schedule]),
                    "problems": say(Message.join("; ", problems)),
                }
                notes.append(note)
            else:
                compared[schedule] = simulate(setup)
    # One time axis for all four, so a shorter step draws shorter.
    span = max((c.total_time for c in compared.values()), default=sim.total_time)
    small = max(5.0, min(16.0, 200 / query.pp))
    others = [
        gantt(c, small, SCHEDULE_NAMES[name], SMALL_WIDTH, span) for name, c in compared.items()
    ]
    return PipelineView(
        query=query,
        simulation=sim,
        closed=closed_form(chosen),
        chart=gantt(sim, big, SCHEDULE_NAMES[query.schedule]),
        others=others,
        compared=compared,
        notes=notes,
        interleaved_in_flight=(
            interleaved_first_stage_in_flight(query.pp, query.virtual_stages)
            if query.schedule == "interleaved"
            else None
        ),
        scales=() if chosen.balanced else chosen.scales,
        imbalanced_step=None if chosen.balanced else imbalanced_step(chosen),
    )
