"""The pipeline-schedule calculator's inputs: one flat model shared by the page, the shareable
URL, the JSON API and the command line, with every bound a person can hit explained in words."""

from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from app.calc.messages import N_, Message, sentence, words_of
from app.calc.pipeline import (
    SCHEDULE_NAMES,
    SCHEDULES,
    PipelineSetup,
    Schedule,
    closed_form,
    imbalanced_step,
    schedule_problems,
    simulate,
)
from app.calc.query_config import QUERY_CONFIG

# Every block is drawn: p x m x v chunk-micro-batches, two or three blocks each.
MAX_BLOCKS = 8192
MAX_TIME = 1e6

LABELS = {
    "schedule": "Schedule",
    "pp": "Pipeline stages p",
    "microbatches": "Micro-batches m",
    "virtual_stages": "Model chunks per stage v",
    "t_f": "Forward time F",
    "t_b": "Input-gradient time B",
    "t_w": "Weight-gradient time W",
    "t_p2p": "Send/receive time",
    "stage_times": "Relative stage times",
    "compare": "Compare all four",
}
MAX_STAGE_TIMES_CHARS = 400


def parse_stage_times(text: str | None) -> tuple[float, ...]:
    """Each stage's time factor from the form's text: "1, 1, 1, 1.3" is (1, 1, 1, 1.3); empty
    or None is () (every stage equal)."""
    if not text or not text.strip():
        return ()
    try:
        scales = tuple(float(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError as exc:
        template = N_("relative stage times are numbers separated by commas, e.g. 1,1,1,1.3")
        raise ValueError(Message(template)) from exc
    if not all(0 < scale <= MAX_TIME for scale in scales):
        raise ValueError(Message(N_("relative stage times must be positive")))
    return scales


@lru_cache(maxsize=2048)
def _simulator_refusal(setup: PipelineSetup) -> str | None:
    """What the simulator refuses `setup` with, as a sentence, or None. Kept per setup: every
    request is validated with it, a whole simulation each time, and the same inputs asked
    again (a study group on one link) give the same answer."""
    try:
        simulate(setup)
    except ValueError as exc:
        return sentence(words_of(exc))
    return None


class PipelineQuery(BaseModel):
    """Everything the pipeline-schedule calculator takes. Times are per micro-batch per stage,
    in any one unit (1 = one forward is a good start)."""

    model_config = QUERY_CONFIG

    schedule: Schedule = Field("1f1b", description="pipeline schedule")
    pp: Annotated[int, Field(ge=1, le=32, description="pipeline stages (GPUs)")] = 4
    microbatches: Annotated[int, Field(ge=1, le=128, description="micro-batches per step")] = 8
    virtual_stages: Annotated[
        int, Field(ge=1, le=8, description="model chunks per stage (interleaved only)")
    ] = 2
    t_f: Annotated[float, Field(gt=0, le=MAX_TIME, description="forward")] = 1.0
    t_b: Annotated[float, Field(gt=0, le=MAX_TIME, description="backward, input gradient")] = 1.0
    t_w: Annotated[float, Field(ge=0, le=MAX_TIME, description="backward, weight gradient")] = 1.0
    t_p2p: Annotated[
        float, Field(ge=0, le=MAX_TIME, description="send/recv between neighbouring stages")
    ] = 0.0
    stage_times: Annotated[
        str | None,
        Field(
            max_length=MAX_STAGE_TIMES_CHARS,
            description=(
                "each stage's time relative to F, B and W, comma-separated, one per stage "
                "(e.g. 1,1,1,1.3 for a last stage with the LM head); empty: all stages equal"
            ),
        ),
    ] = None
    compare: bool = Field(True, description="also simulate the other three schedules")

    @model_validator(mode="after")
    def _consistent(self) -> PipelineQuery:
        problems = []
        try:
            parse_stage_times(self.stage_times)
        except ValueError as exc:
            raise ValueError(sentence(words_of(exc))) from exc
        if self.pp * self.microbatches * self.virtual_stages > MAX_BLOCKS:
            template = N_(
                "Stages × micro-batches × model chunks must be at most %(most)s "
                "(the chart draws every block)"
            )
            problems.append(Message(template, most=f"{MAX_BLOCKS:,}"))
        else:
            problems += [sentence(p) for p in schedule_problems(self.setup(self.schedule))]
        if not problems:
            # Anything the simulator itself refuses becomes a message here, never a 500 later.
            refusal = _simulator_refusal(self.setup(self.schedule))
            if refusal is not None:
                problems.append(refusal)
        if problems:
            raise ValueError(Message.join("; ", problems))
        return self

    def setup(self, schedule: Schedule) -> PipelineSetup:
        return PipelineSetup(
            schedule=schedule, stages=self.pp, microbatches=self.microbatches,
            chunks=self.virtual_stages, t_f=self.t_f, t_b=self.t_b, t_w=self.t_w,
            t_p2p=self.t_p2p, stage_scale=parse_stage_times(self.stage_times),
        )  # fmt: skip


def schedule_summary(setup: PipelineSetup) -> dict[str, Any]:
    """One schedule's numbers (no timeline), or the reason it cannot run this set-up."""
    problems = schedule_problems(setup)
    base = {"schedule": setup.schedule, "name": SCHEDULE_NAMES[setup.schedule]}
    if problems:
        return {**base, "problem": Message.join("; ", problems)}
    sim = simulate(setup)
    return {
        **base,
        "problem": None,
        "total_time": sim.total_time,
        "bubble_fraction_of_total": sim.bubble_fraction_of_total,
        "bubble_over_ideal": sim.bubble_over_ideal,
        "closed_form_over_ideal": closed_form(setup).over_ideal,
        "imbalanced_step": imbalanced_step(setup),
        "peak_in_flight": max(sim.peak_in_flight),
    }


def pipeline_result(query: PipelineQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data: what the API returns and `--json` prints."""
    setup = query.setup(query.schedule)
    sim = simulate(setup)
    form = closed_form(setup)
    return {
        "schedule": query.schedule,
        "schedule_name": SCHEDULE_NAMES[query.schedule],
        "pp": query.pp,
        "microbatches": query.microbatches,
        "virtual_stages": setup.virtual_chunks,
        "t_f": query.t_f,
        "t_b": query.t_b,
        "t_w": query.t_w,
        "t_p2p": query.t_p2p,
        "stage_scale": list(setup.scales),
        "total_time": sim.total_time,
        # Work on the slowest stage: with equal stages, every stage's.
        "ideal_time": query.microbatches * (query.t_f + query.t_b + query.t_w) * max(setup.scales),
        "imbalanced_step": imbalanced_step(setup),
        "busy_time": sim.busy_time,
        "idle_time": sim.idle_time,
        "bubble_fraction_of_total": sim.bubble_fraction_of_total,
        "bubble_over_ideal": sim.bubble_over_ideal,
        "closed_form": asdict(form),
        "peak_in_flight": sim.peak_in_flight,
        "timeline": [
            [
                {
                    "kind": b.kind,
                    "microbatch": b.microbatch,
                    "chunk": b.chunk,
                    "start": b.start,
                    "end": b.end,
                }
                for b in row
            ]
            for row in sim.timeline
        ],  # fmt: skip
        "comparison": [schedule_summary(query.setup(s)) for s in SCHEDULES]
        if query.compare
        else [],
    }
