"""Generated questions on the pipeline-schedule calculator (app.calc.pipeline).

Answers come from the event simulation, the same one the page draws; the worked steps are the
schedule's published closed form (`closed_form`), which the simulation matches exactly for
uniform stages and no send/receive time. Inputs a question does not draw take the
calculator's defaults (app.calc.pipeline_query.PipelineQuery): t_f = t_b = t_w = 1, so a whole
backward (B + W) takes twice a forward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.calc.pipeline import SCHEDULES, Simulation, closed_form, simulate
from app.calc.pipeline_query import PipelineQuery
from app.i18n import gettext
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import SCHEDULE_WORDS, say

# `schedule` is drawn as an index into this tuple: gpipe, 1f1b, interleaved, zb-h1.
SCHEDULE_ORDER = SCHEDULES


def _number(value: float) -> str:
    return f"{value:,.6g}"


def _run(inputs: Mapping[str, float]) -> tuple[PipelineQuery, Simulation]:
    fields: dict[str, object] = {"schedule": SCHEDULE_ORDER[int(inputs.get("schedule", 1))]}
    for name in ("pp", "microbatches", "virtual_stages"):
        if name in inputs:
            fields[name] = int(inputs[name])
    for name in ("t_f", "t_b", "t_w", "t_p2p"):
        if name in inputs:
            fields[name] = float(inputs[name])
    query = PipelineQuery(**fields, compare=False)  # type: ignore[arg-type]
    return query, simulate(query.setup(query.schedule))


def _fields(query: PipelineQuery) -> dict[str, str]:
    return {
        "schedule": say(SCHEDULE_WORDS, query.schedule),
        "pp": str(query.pp),
        "microbatches": str(query.microbatches),
        "virtual_stages": str(query.virtual_stages),
        "t_f": _number(query.t_f),
        "t_b": _number(query.t_b),
        "t_w": _number(query.t_w),
        "t_backward": _number(query.t_b + query.t_w),
        "t_p2p": _number(query.t_p2p),
    }


def bubble_over_ideal_percent(inputs: Mapping[str, float]) -> Solution:
    """Idle time over the useful work, t_pb / t_id, in percent (Megatron-LM's ratio)."""
    query, sim = _run(inputs)
    form = closed_form(sim.setup)
    return Solution(
        answer=100 * sim.bubble_over_ideal,
        prompt_fields=_fields(query),
        steps_latex=[form.formula, form.substituted],
    )


def bubble_fraction_of_step_percent(inputs: Mapping[str, float]) -> Solution:
    """Idle share of the whole step, t_pb / (t_id + t_pb), in percent (GPipe's ratio)."""
    query, sim = _run(inputs)
    form = closed_form(sim.setup)
    share = form.fraction_of_total
    return Solution(
        answer=100 * sim.bubble_fraction_of_total,
        prompt_fields=_fields(query),
        steps_latex=[
            form.formula,
            form.substituted,
            rf"\frac{{t_{{pb}}}}{{t_{{id}} + t_{{pb}}}} = "
            rf"\frac{{{form.bubble_time:.6g}}}{{{form.bubble_time / form.over_ideal:.6g} + "
            rf"{form.bubble_time:.6g}}} = {share:.6g}",
        ],
    )


def step_time(inputs: Mapping[str, float]) -> Solution:
    """The step's length, first forward to last backward, in the unit the times are given in."""
    query, sim = _run(inputs)
    form = closed_form(sim.setup)
    ideal = query.microbatches * (query.t_f + query.t_b + query.t_w)
    steps = [
        r"t_\text{step} = t_{id} + t_{pb} = m\,(t_f + t_b + t_w) + t_{pb}",
        form.substituted,
        rf"t_\text{{step}} = {query.microbatches}\,({_number(query.t_f)} + "
        rf"{_number(query.t_b)} + {_number(query.t_w)}) + {form.bubble_time:.6g} = "
        rf"{ideal + form.bubble_time:.6g}",
    ]
    if not form.exact:
        # Send/receive time, or a ZB-H1 weight gradient too long to hide: the closed form is
        # a lower bound, and the simulation gives the step as the schedule really runs.
        simulated = gettext("simulated")
        steps.append(rf"\text{{{simulated}}}: t_\text{{step}} = {sim.total_time:.6g}")
    return Solution(answer=sim.total_time, prompt_fields=_fields(query), steps_latex=steps)


def _held(schedule: str) -> str:
    """Why the first stage holds what it holds: the schedule's words between its formulas, in
    the request's language."""
    if schedule == "gpipe":
        held = gettext("GPipe: every forward runs before any backward, so stage 0 holds")
        return rf"\text{{{held} }} m"
    if schedule == "1f1b":
        stage, runs = gettext("1F1B: stage"), gettext("runs")
        warm = gettext("warm-up forwards, then one more before its first backward: stage 0 holds")
        return rf"\text{{{stage} }} s \text{{ {runs} }} p - s - 1 \text{{ {warm} }} \min(p, m)"
    if schedule == "interleaved":
        name, chunks = gettext("Interleaved:"), gettext("chunk forwards in flight on stage 0, each")
        of_stage = gettext("of the stage")
        return (
            rf"\text{{{name} }} \min(2(p-1) + (v-1)p + 1,\ m v) \text{{ {chunks} }} 1/v "
            rf"\text{{ {of_stage}}}"
        )
    keeps = gettext("ZB-H1: stage 0 keeps 1F1B's peak,")
    return rf"\text{{{keeps} }} \min(p, m)"


def peak_in_flight_first_stage(inputs: Mapping[str, float]) -> Solution:
    """Micro-batches whose activations the first stage holds at its peak."""
    query, sim = _run(inputs)
    held, simulated_peak = _held(query.schedule), gettext("simulated peak on stage 0")
    return Solution(
        answer=sim.peak_in_flight[0],
        prompt_fields=_fields(query),
        steps_latex=[
            held,
            rf"\text{{{simulated_peak}}} = {sim.peak_in_flight[0]:.6g}",
        ],
    )


def slow_last_stage_step(inputs: Mapping[str, float]) -> Solution:
    """1F1B's step when the last stage takes `slow` times the others (the LM head and loss on
    the last stage: Llama 3, arXiv:2407.21783, Section 3.3.2). The simulation's answer; the
    worked step is app.calc.pipeline.imbalanced_step's formula, exact with the slow stage last.
    """
    p, m, slow = int(inputs.get("pp", 4)), int(inputs.get("microbatches", 8)), inputs["slow"]
    stage_times = ",".join(["1"] * (p - 1) + [f"{slow:g}"])
    query = PipelineQuery(
        schedule="1f1b", pp=p, microbatches=m, stage_times=stage_times, compare=False
    )
    setup = query.setup("1f1b")
    sim = simulate(setup)
    work = query.t_f + query.t_b + query.t_w
    return Solution(
        answer=sim.total_time,
        prompt_fields={**_fields(query), "slow": _number(slow), "t_stage": _number(work)},
        steps_latex=[
            r"t_\text{step} = (t_f + t_b + t_w)\Big(\sum_i s_i + (m-1)\max_i s_i\Big)",
            rf"t_\text{{step}} = {_number(work)}\,\big(({p}-1) \cdot 1 + {_number(slow)} + "
            rf"({m}-1) \cdot {_number(slow)}\big) = {sim.total_time:.6g}",
        ],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "pipeline.bubble_over_ideal_percent": bubble_over_ideal_percent,
    "pipeline.bubble_fraction_of_step_percent": bubble_fraction_of_step_percent,
    "pipeline.step_time": step_time,
    "pipeline.peak_in_flight_first_stage": peak_in_flight_first_stage,
    "pipeline.slow_last_stage_step": slow_last_stage_step,
}
