"""The pipeline-schedule calculator's result as the page shows it: Gantt charts as SVG
geometry, and the numbers formatted. Every number comes from app.calc.pipeline."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.calc.messages import Message
from app.calc.pipeline import (
    SCHEDULE_NAMES,
    SCHEDULES,
    ClosedForm,
    Simulation,
    closed_form,
    interleaved_first_stage_in_flight,
    schedule_problems,
    simulate,
)
from app.calc.pipeline_query import PipelineQuery
from app.i18n import gettext, say, translate

BIG_WIDTH = 1000.0
SMALL_WIDTH = 480.0
LEFT = 64.0
RIGHT = 12.0
TOP = 6.0
AXIS = 26.0
KIND_CLASS = {"F": "f", "B": "b", "BW": "bw", "W": "w"}


@dataclass(frozen=True)
class Shape:
    css_class: str  # kind and model chunk, coloured by static/css/pipeline.css
    d: str  # one SVG path of many rectangles


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str


@dataclass(frozen=True)
class Gantt:
    schedule: str
    title: str
    width: float
    height: float
    row_height: float
    shapes: list[Shape]
    labels: list[Label]  # micro-batch numbers inside blocks wide enough
    rows: list[Label]  # stage names
    ticks: list[Label]  # time axis
    plot_left: float
    plot_right: float
    plot_bottom: float
    stroke_width: float  # white gaps between blocks, left out when blocks are too thin
    summary: str


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


def _tick_step(total: float) -> float:
    raw = total / 8
    power = 10 ** math.floor(math.log10(raw))
    return next(k * power for k in (1, 2, 5, 10) if k * power >= raw)


def number(x: float) -> str:
    """A time for the page: whole numbers in full, others to 4 significant digits."""
    if x == round(x) and abs(x) < 1e15:
        return f"{x:,.0f}"
    return f"{x:,.4g}" if abs(x) < 1e4 else f"{x:,.1f}"


def plain(x: float) -> str:
    """A number inside LaTeX: no thousands separators (KaTeX spaces a comma out)."""
    return f"{x:.6g}"


def percent(x: float) -> str:
    return f"{100 * x:.2f} %"


def gantt(
    sim: Simulation,
    row_height: float,
    title: str,
    width: float = BIG_WIDTH,
    span: float | None = None,
) -> Gantt:
    """A Gantt chart: one row per stage, one path per kind of block and model chunk.

    `span` is the time the axis covers (charts compared side by side share one); the
    simulation's own total when left out.
    """
    p = sim.setup.stages
    span = span or sim.total_time
    scale = (width - LEFT - RIGHT) / span
    thinnest = min(b.end - b.start for row in sim.timeline for b in row if b.end > b.start)
    paths: dict[str, list[str]] = {}
    labels = []
    font = min(11.0, row_height * 0.6)
    for stage, row in enumerate(sim.timeline):
        y = TOP + stage * row_height
        for block in row:
            if block.end <= block.start:
                continue
            x = LEFT + block.start * scale
            w = (block.end - block.start) * scale
            css = f"{KIND_CLASS[block.kind]} c{block.chunk}"
            paths.setdefault(css, []).append(
                f"M{x:.2f} {y:.2f}h{w:.2f}v{row_height - 2:.2f}h{-w:.2f}z"
            )
            text = str(block.microbatch + 1)
            if w >= font * 0.65 * len(text) + 3 and row_height >= 12:
                labels.append(Label(x + w / 2, y + row_height / 2 + font * 0.35, text))
    bottom = TOP + p * row_height
    step = _tick_step(span)
    ticks = [
        Label(LEFT + k * step * scale, bottom + 16, number(k * step))
        for k in range(int(span / step + 1e-9) + 1)
    ]
    rows = [Label(LEFT - 6, TOP + s * row_height + row_height / 2 + 4, f"{s}") for s in range(p)]
    return Gantt(
        schedule=sim.setup.schedule,
        title=title,
        width=width,
        height=bottom + AXIS,
        row_height=row_height,
        shapes=[Shape(css, "".join(d)) for css, d in paths.items()],
        labels=labels,
        rows=rows,
        ticks=ticks,
        plot_left=LEFT,
        plot_right=width - RIGHT,
        plot_bottom=bottom,
        stroke_width=1.0 if thinnest * scale >= 4 else 0.0,
        summary=gettext(
            "%(schedule)s: %(stages)s stages, total time %(total)s, bubble %(bubble)s of the total"
        )
        % {
            "schedule": translate(SCHEDULE_NAMES[sim.setup.schedule]),
            "stages": p,
            "total": number(sim.total_time),
            "bubble": percent(sim.bubble_fraction_of_total),
        },
    )


def pipeline_view(query: PipelineQuery) -> PipelineView:
    sim = simulate(query.setup(query.schedule))
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
        closed=closed_form(query.setup(query.schedule)),
        chart=gantt(sim, big, SCHEDULE_NAMES[query.schedule]),
        others=others,
        compared=compared,
        notes=notes,
        interleaved_in_flight=(
            interleaved_first_stage_in_flight(query.pp, query.virtual_stages)
            if query.schedule == "interleaved"
            else None
        ),
    )
