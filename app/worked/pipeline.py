"""Pipeline schedules, drawn: a simulation's Gantt chart as SVG geometry (one row per stage,
a block per forward, backward and weight-gradient pass), and the numbers its formulas write.
The pipeline calculator's page and the pipeline-schedules demo draw their charts with it.

Every time comes from app.calc.pipeline's simulation; this module only places and labels it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.calc.pipeline import SCHEDULE_NAMES, Simulation
from app.i18n import gettext, translate

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
