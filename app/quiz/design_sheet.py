"""A design round's answer sheet, graded term by term by the calculators (issue #27).

Every expected figure is a calculator's, for the learner's own choice where there is one:

- training: the layout is scored as the mock's "design the run" scores it (design_run.
  score_layout, against the planner's plan of the round's cluster); memory per GPU, step time
  and days to train are the planner's for THE LEARNER'S layout (its best layout's when the
  layout breaks a rule, said so); whether it meets the deadline and the GPU-hour budget
  follows from those days. The checkpoint interval is judged by the goodput it gives
  (app.calc.failures.goodput, with the job's MTBF from the nodes' annual failure rate and the
  checkpoint's write time from app.calc.checkpoint_size): Young's interval maximises goodput,
  and the curve is flat near it, so any interval wasting at most CHECKPOINT_WASTE_WITHIN more
  than Young's scores full marks.
- serving: the TP degree must split the model's heads (inference.check_tensor_parallel), stay
  inside a node, divide the GPUs into replicas, and fit (inference.inference_memory at the
  replica's share of the sequences); the smallest such TP scores full marks (most replicas),
  a larger one that fits half. Weights and KV cache per GPU, whether it fits, and the decode
  step (decode_step_s) are the calculators' for the learner's TP.
- both: the "what to watch" rubric, ticked by the learner, scores the share ticked.

A number scores full marks within PASS_WITHIN of the calculator's, half within twice that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session

from app.calc.messages import N_, Message
from app.calc.units import to_gb
from app.forms import parse_form
from app.quiz.design_keys import (
    ServingKey,
    best_serving_key,
    checkpoint_key,
    num,
    serving_key,
)
from app.quiz.design_rounds import DesignRound, TrainingInputs
from app.quiz.design_run import DESIGN_LABELS, DesignScore, LayoutFields, Verdict, score_layout
from app.quiz.layouts import layout_text, plan_for
from app.quiz.models import DesignAttempt

Grade = Literal["pass", "partial", "fail"]
PASS_WITHIN = {"memory_gb": 0.15, "step_s": 0.20, "days": 0.20, "weights_gb": 0.15,
               "kv_gb": 0.15, "decode_ms": 0.20}  # fmt: skip
CHECKPOINT_WASTE_WITHIN = 0.10  # full marks: at most 10% more waste than Young's interval
CHECKPOINT_HALF_WITHIN = 0.50
# How much each term counts in the sheet's score.
WEIGHTS = {
    "layout": 3, "memory_gb": 2, "step_s": 2, "days": 1, "meets_deadline": 0.5,
    "within_budget": 0.5, "checkpoint_min": 2, "watch": 1,
    "tp": 3, "replicas": 1, "weights_gb": 2, "kv_gb": 2, "fits": 1, "decode_ms": 2,
}  # fmt: skip

Finite: dict[str, bool] = {"allow_inf_nan": False}
YesNo = Literal["yes", "no"]
YES_NO_WORDS = {"yes": N_("yes"), "no": N_("no")}  # as a graded term's value shows them
WatchIndex = Annotated[int, Field(ge=0, le=4)]


class TrainingSheet(LayoutFields):
    memory_gb: float = Field(gt=0, le=10_000, **Finite)
    step_s: float = Field(gt=0, le=1e6, **Finite)
    days: float = Field(gt=0, le=1e6, **Finite)
    meets_deadline: YesNo
    within_budget: YesNo
    checkpoint_min: float = Field(gt=0, le=1e6, **Finite)
    notes: str = Field(default="", max_length=4000)
    watch: list[WatchIndex] = Field(default_factory=list, max_length=5)


class ServingSheet(BaseModel):
    model_config = ConfigDict(extra="ignore")

    tp: int = Field(ge=1, le=64)
    replicas: int = Field(ge=1, le=4096)
    weights_gb: float = Field(gt=0, le=10_000, **Finite)
    kv_gb: float = Field(gt=0, le=10_000, **Finite)
    fits: YesNo
    decode_ms: float = Field(gt=0, le=1e6, **Finite)
    notes: str = Field(default="", max_length=4000)
    watch: list[WatchIndex] = Field(default_factory=list, max_length=5)


SHEET_LABELS = {
    **DESIGN_LABELS,
    "memory_gb": N_("Memory per GPU (GB)"),
    "step_s": N_("Step time (s)"),
    "days": N_("Days to train"),
    "meets_deadline": N_("Meets the deadline"),
    "within_budget": N_("Within the GPU-hour budget"),
    "checkpoint_min": N_("Checkpoint interval (minutes)"),
    "notes": N_("What you would watch"),
    "watch": N_("What to watch"),
    "layout": N_("Layout"),
    "tp": N_("Tensor-parallel degree"),
    "replicas": N_("Replicas"),
    "weights_gb": N_("Weights per GPU (GB)"),
    "kv_gb": N_("KV cache per GPU (GB)"),
    "fits": N_("Fits in memory"),
    "decode_ms": N_("Decode step (ms)"),
}


@dataclass(frozen=True)
class TermGrade:
    term: str  # a key of WEIGHTS; SHEET_LABELS names it
    yours: str
    expected: str  # the calculator's figure, as the page shows it
    grade: Grade
    score: float  # 0 to 1
    why: Message  # one line; a page says it (|say)

    @property
    def label(self) -> str:
        return SHEET_LABELS[self.term]


@dataclass(frozen=True)
class SheetGrade:
    terms: tuple[TermGrade, ...]
    score: float  # the weighted mean of the terms'
    verdict: Verdict
    rules: tuple[str, ...]  # the planner's rules the layout broke
    layout: DesignScore | None  # training rounds: the layout's score, with the planner's numbers


def parse_sheet(
    round_: DesignRound, form: Mapping[str, Any]
) -> tuple[TrainingSheet | ServingSheet | None, list[str]]:
    """The validated sheet, or None and the messages for the form; the rubric's ticks are a
    list (a form sends one `watch` per box ticked)."""
    data = {k: v for k, v in form.items() if k != "watch"}
    getlist = getattr(form, "getlist", None)
    data["watch"] = getlist("watch") if getlist else form.get("watch", [])
    model = TrainingSheet if round_.kind == "training" else ServingSheet
    return parse_form(model, data, SHEET_LABELS)


# --- grading ------------------------------------------------------------------------------


def _number(term: str, yours: float, expected: float, digits: int, source: Message) -> TermGrade:
    within = PASS_WITHIN[term]
    off = abs(yours / expected - 1)
    values = {"off": f"{off:.0%}", "within": f"{within:.0%}", "half": f"{2 * within:.0%}",
              "source": source}  # fmt: skip
    if off <= within:
        grade: Grade = "pass"
        why = Message(N_("Within %(within)s of %(source)s."), **values)
    else:
        grade = "partial" if off <= 2 * within else "fail"
        why = Message(N_("%(off)s off %(source)s: full marks within %(within)s, half within "
                         "%(half)s."), **values)  # fmt: skip
    return TermGrade(term, num(yours, digits), num(expected, digits), grade,
                     {"pass": 1.0, "partial": 0.5, "fail": 0.0}[grade], why)  # fmt: skip


def _yes_no(term: str, yours: str, expected: bool, why: Message) -> TermGrade:
    right = (yours == "yes") == expected
    return TermGrade(term, yours, "yes" if expected else "no", "pass" if right else "fail",
                     1.0 if right else 0.0, why)  # fmt: skip


def _watch(round_: DesignRound, ticked: list[int]) -> TermGrade:
    total = len(round_.watch)
    n = len({i for i in ticked if i < total})
    grade: Grade = "pass" if n == total else "partial" if n else "fail"
    why = Message(N_("You ticked %(n)s of the %(total)s points."), n=n, total=total)
    return TermGrade("watch", str(n), str(total), grade, n / total, why)


def _layout_term(score: DesignScore) -> TermGrade:
    grade: Grade = {"full": "pass", "partial": "partial"}.get(score.verdict, "fail")  # type: ignore[assignment]
    yours = layout_text(score.cost.layout if score.cost else score.rules[0].layout)
    return TermGrade("layout", yours, layout_text(score.best.layout), grade, score.score,
                     score.explanation)  # fmt: skip


def _checkpoint_term(t: TrainingInputs, minutes: float) -> TermGrade:
    ck = checkpoint_key(t)
    best_waste = 1 - ck.goodput(ck.young_s)
    waste = 1 - ck.goodput(minutes * 60)
    ratio = waste / best_waste
    grade: Grade = ("pass" if ratio <= 1 + CHECKPOINT_WASTE_WITHIN
                    else "partial" if ratio <= 1 + CHECKPOINT_HALF_WITHIN else "fail")  # fmt: skip
    why = Message(
        N_("Your interval loses %(waste)s of the run to checkpoints, lost work and restarts; "
           "Young's %(young)s min loses %(best)s (Daly's: %(daly)s min). Full marks within "
           "%(within)s more."),
        waste=f"{waste:.2%}", best=f"{best_waste:.2%}", young=num(ck.young_s / 60),
        daly=num(ck.daly_s / 60), within=f"{CHECKPOINT_WASTE_WITHIN:.0%}",
    )  # fmt: skip
    score = {"pass": 1.0, "partial": 0.5, "fail": 0.0}[grade]
    return TermGrade("checkpoint_min", num(minutes), num(ck.young_s / 60), grade, score, why)


def grade_training(round_: DesignRound, sheet: TrainingSheet) -> SheetGrade:
    t = round_.training
    assert t is not None
    plan_ = plan_for(t.scenario, t.token_budget)
    layout = score_layout(plan_, sheet.layout())
    cost = layout.cost or layout.best
    source = (Message(N_("the planner's figure for your layout")) if layout.cost else
              Message(N_("the planner's best layout's figure (yours breaks a rule)")))  # fmt: skip
    gpus = plan_.request.cluster.gpus
    gpu_hours = cost.days * 24 * gpus
    on_time = Message(N_("%(days)s days against a deadline of %(deadline)s."),
                      days=num(cost.days, 1), deadline=num(t.deadline_days))  # fmt: skip
    in_budget = Message(N_("%(hours)s GPU-hours against a budget of %(budget)s."),
                        hours=num(gpu_hours), budget=num(t.budget_gpu_hours))  # fmt: skip
    terms = (
        _layout_term(layout),
        _number("memory_gb", sheet.memory_gb, to_gb(cost.memory_bytes), 1, source),
        _number("step_s", sheet.step_s, cost.step_time_s, 2, source),
        _number("days", sheet.days, cost.days, 1, source),
        _yes_no("meets_deadline", sheet.meets_deadline, cost.days <= t.deadline_days, on_time),
        _yes_no(
            "within_budget", sheet.within_budget, gpu_hours <= t.budget_gpu_hours, in_budget
        ),  # fmt: skip
        _checkpoint_term(t, sheet.checkpoint_min),
        _watch(round_, sheet.watch),
    )
    total = _weighted(terms)
    verdict: Verdict = layout.verdict if layout.verdict in ("breaks_rule", "does_not_fit") else (
        "full" if total >= 1 - 1e-9 else "partial")  # fmt: skip
    return SheetGrade(terms, total, verdict, tuple(r.rule for r in layout.rules), layout)


def _tp_term(key: ServingKey, best: ServingKey) -> TermGrade:
    if key.problem is not None:
        return TermGrade("tp", str(key.tp), str(best.tp), "fail", 0.0, key.problem)
    memory = key.memory
    assert memory is not None
    if not memory.fits:
        why = Message(N_("At TP %(tp)s a GPU needs %(need)s GB, more than the %(budget)s GB "
                         "the server may use."), tp=key.tp,
                      need=num(to_gb(memory.total_bytes), 1),
                      budget=num(to_gb(memory.budget_bytes), 1))  # fmt: skip
        return TermGrade("tp", str(key.tp), str(best.tp), "fail", 0.0, why)
    if key.tp == best.tp:
        why = Message(N_("The smallest TP that fits: the most replicas for the GPUs."))
        return TermGrade("tp", str(key.tp), str(best.tp), "pass", 1.0, why)
    why = Message(N_("It fits, but so does TP %(best)s, with %(more)s replicas rather than "
                     "%(yours)s: more sequences per GPU."), best=best.tp, more=best.replicas,
                  yours=key.replicas)  # fmt: skip
    return TermGrade("tp", str(key.tp), str(best.tp), "partial", 0.5, why)


def grade_serving(round_: DesignRound, sheet: ServingSheet) -> SheetGrade:
    s = round_.serving
    assert s is not None
    best, yours = best_serving_key(s), serving_key(s, sheet.tp)
    key = yours if yours.problem is None else best
    memory = key.memory
    assert memory is not None
    source = (Message(N_("the calculator's figure at your TP")) if key is yours else
              Message(N_("the calculator's figure at TP %(tp)s (yours cannot be used)"),
                      tp=best.tp))  # fmt: skip
    replicas_why = Message(N_("%(gpus)s GPUs in replicas of %(tp)s."), gpus=s.gpus, tp=key.tp)
    fits_why = Message(N_("%(need)s GB per GPU against the %(budget)s GB the server may use."),
                       need=num(to_gb(memory.total_bytes), 1),
                       budget=num(to_gb(memory.budget_bytes), 1))  # fmt: skip
    replicas_right = sheet.replicas == key.replicas
    terms = (
        _tp_term(yours, best),
        TermGrade("replicas", str(sheet.replicas), str(key.replicas),
                  "pass" if replicas_right else "fail", float(replicas_right), replicas_why),
        _number("weights_gb", sheet.weights_gb, to_gb(memory.term("weights").bytes_), 1,
                source),
        _number("kv_gb", sheet.kv_gb, to_gb(memory.term("kv_cache").bytes_), 1, source),
        _yes_no("fits", sheet.fits, memory.fits, fits_why),
        _number("decode_ms", sheet.decode_ms, key.decode_s * 1e3, 1, source),
        _watch(round_, sheet.watch),
    )  # fmt: skip
    total = _weighted(terms)
    verdict: Verdict = ("breaks_rule" if yours.problem is not None
                        else "does_not_fit" if not yours.fits
                        else "full" if total >= 1 - 1e-9 else "partial")  # fmt: skip
    return SheetGrade(terms, total, verdict, (), None)


def grade_sheet(round_: DesignRound, sheet: TrainingSheet | ServingSheet) -> SheetGrade:
    if isinstance(sheet, TrainingSheet):
        return grade_training(round_, sheet)
    return grade_serving(round_, sheet)


def _weighted(terms: tuple[TermGrade, ...]) -> float:
    return sum(t.score * WEIGHTS[t.term] for t in terms) / sum(WEIGHTS[t.term] for t in terms)


def record_round(
    session: Session,
    user_id: int,
    round_: DesignRound,
    sheet: TrainingSheet | ServingSheet,
    result: SheetGrade,
) -> DesignAttempt:
    """Stores the sheet with each term's grade as shown (English words), committed before the
    page says it."""
    layout = (LayoutFields.model_validate(sheet.model_dump()).model_dump()
              if isinstance(sheet, TrainingSheet) else {})  # fmt: skip
    graded = [{"term": t.term, "yours": t.yours, "expected": t.expected, "grade": t.grade,
               "score": t.score, "why": str(t.why)} for t in result.terms]  # fmt: skip
    attempt = DesignAttempt(
        user_id=user_id, scenario=0, layout=layout, score=result.score,
        verdict=result.verdict, rules=list(result.rules), round_id=round_.id,
        sheet={"answers": sheet.model_dump(), "terms": graded},
    )  # fmt: skip
    session.add(attempt)
    session.commit()
    return attempt
