"""The mock interview's "design the run": a scenario (app.quiz.layouts), the learner's layout,
and a score against the planner (app.calc.planner).

The planner costs layouts with the calibrated default profile (app/calc/profiles/), and every
verdict that compares step times says how uncertain they are: the profile's error on published
runs held out of its fit (mean and worst), which the 5% of full marks is wider than.

Scoring, one function whatever the form or page it came from:
- the layout breaks a rule, or does not fit in memory: 0, naming the rule or the GB missing;
- it fits and its step is within FULL_MARKS_WITHIN of the planner's best: 1;
- it fits but is slower: best step / its step (partial), naming the step term most to blame
  and by how many seconds (`why_not`), and saying whether it is on the Pareto front (no
  fitting layout both faster and smaller), i.e. a defensible memory-for-time trade.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session

from app.calc.messages import N_, Message
from app.calc.performance import PerformanceProfile
from app.calc.planner import RULES, Layout, LayoutCost, Plan, Rejected, why_not
from app.calc.units import to_gb
from app.quiz.layouts import SCENARIOS, TERM_TEXT, scenario_plan
from app.quiz.models import DesignAttempt

FULL_MARKS_WITHIN = 0.05  # a step at most 5% longer than the best scores full marks

Verdict = Literal["full", "partial", "breaks_rule", "does_not_fit"]


class LayoutFields(BaseModel):
    """A layout's knobs as a form sends them: the mock's scenario form and a design round's
    answer sheet (app/quiz/design_sheet.py) both."""

    model_config = ConfigDict(extra="ignore")

    dp: int = Field(ge=1, le=4096)
    tp: int = Field(default=1, ge=1, le=4096)
    pp: int = Field(default=1, ge=1, le=4096)
    cp: int = Field(default=1, ge=1, le=4096)
    ep: int = Field(default=1, ge=1, le=4096)
    zero: Literal["0", "1", "2", "3", "dist-opt"] = "0"
    recompute: Literal["none", "selective", "full"] = "none"
    micro_batch: int = Field(default=1, ge=1, le=4096)
    schedule: Literal["1f1b", "interleaved", "zb-h1", "gpipe"] = "1f1b"
    virtual_stages: int = Field(default=1, ge=1, le=64)

    def layout(self) -> Layout:
        dist = self.zero == "dist-opt"
        return Layout(
            dp=self.dp, tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep,
            zero_stage=0 if dist else int(self.zero), distributed_optimizer=dist,
            recompute=self.recompute, micro_batch=self.micro_batch, schedule=self.schedule,
            virtual_stages=self.virtual_stages,
        )  # fmt: skip


class DesignAnswer(LayoutFields):
    """The learner's layout for one of the mock's scenarios."""

    scenario: int = Field(ge=0, lt=len(SCENARIOS))


DESIGN_LABELS = {
    "scenario": "Scenario",
    "dp": "DP",
    "tp": "TP",
    "pp": "PP",
    "cp": "CP",
    "ep": "EP",
    "zero": "ZeRO",
    "recompute": "Recompute",
    "micro_batch": "Micro-batch",
    "schedule": "Schedule",
    "virtual_stages": "Virtual stages",
}


@dataclass(frozen=True)
class DesignScore:
    score: float  # 0 to 1
    verdict: Verdict
    explanation: Message  # one paragraph, with the planner's numbers; a page says it (|say)
    rules: tuple[Rejected, ...]  # breaks_rule: every rule broken
    cost: LayoutCost | None  # None when a rule is broken
    best: LayoutCost
    blame: str | None  # partial: the step term most to blame; does_not_fit: "memory"
    blame_s: float  # partial: that term's excess over the best layout's, seconds
    slowdown: float | None  # step / best step, when it fits
    on_pareto_front: bool


def _on_front(cost: LayoutCost, front: tuple[LayoutCost, ...]) -> bool:
    """No fitting layout of the front is at least as fast and as small, and better in one."""
    return not any(
        other.step_time_s <= cost.step_time_s
        and other.memory_bytes <= cost.memory_bytes
        and (other.step_time_s < cost.step_time_s or other.memory_bytes < cost.memory_bytes)
        for other in front
    )


def uncertainty(profile: PerformanceProfile) -> Message:
    """' Its step times are off by 3.6% on average ...': how far the profile's step times were
    from published runs held out of its fit; empty where the profile does not say."""
    if profile.held_out_mean_error is None or profile.held_out_worst_error is None:
        return Message("")
    template = N_(
        " The planner's step times come from the profile %(name)s, fitted to published runs: "
        "on runs held out of the fit they were off by %(mean)s on average, %(worst)s at worst."
    )
    return Message(template, name=profile.name, mean=f"{profile.held_out_mean_error:.1%}",
                   worst=f"{profile.held_out_worst_error:.1%}")  # fmt: skip


def score_design(answer: DesignAnswer) -> DesignScore:
    """The learner's layout against the planner's plan of the scenario (module docstring)."""
    return score_layout(scenario_plan(answer.scenario), answer.layout())


def score_layout(plan_: Plan, layout: Layout) -> DesignScore:
    """A layout against any plan: a mock scenario's or a design round's cluster."""
    best = plan_.best
    if best is None:
        raise ValueError("no layout fits this cluster")
    why = why_not(plan_, layout)
    if why.rejected:
        rule_template = N_("%(rule)s (%(reason)s): %(text)s")
        broken = [
            Message(rule_template, rule=r.rule, reason=r.reason, text=RULES[r.rule])
            for r in why.rejected
        ]
        rules = Message.join("; ", broken)
        text = Message(N_("Zero: it breaks a rule. %(rules)s."), rules=rules)
        return DesignScore(0.0, "breaks_rule", text, why.rejected, None, best, None, 0.0, None,
                           False)  # fmt: skip
    cost = why.cost
    assert cost is not None
    capacity = plan_.request.cluster.gpu_memory_bytes
    if not cost.fits:
        over = cost.memory_bytes - capacity
        template = N_(
            "Zero: it does not fit. It needs %(memory)s GB per GPU (model states %(states)s, "
            "activations %(activations)s), %(over)s GB more than the %(capacity)s GB a GPU has."
        )
        text = Message(
            template,
            memory=f"{to_gb(cost.memory_bytes):.1f}",
            states=f"{to_gb(cost.model_states_bytes):.1f}",
            activations=f"{to_gb(cost.activation_bytes):.1f}",
            over=f"{to_gb(over):.1f}",
            capacity=f"{to_gb(capacity):.1f}",
        )
        return DesignScore(0.0, "does_not_fit", text, (), cost, best, "memory", 0.0, None,
                           False)  # fmt: skip
    slowdown = cost.step_time_s / best.step_time_s
    front = _on_front(cost, plan_.pareto)
    numbers_template = N_(
        "Your step is %(step)s s at %(memory)s GB per GPU; the planner's best (%(best)s) takes "
        "%(best_step)s s at %(best_memory)s GB."
    )
    numbers = Message(
        numbers_template,
        step=f"{cost.step_time_s:.2f}",
        memory=f"{to_gb(cost.memory_bytes):.1f}",
        best=best.layout.describe(),
        best_step=f"{best.step_time_s:.2f}",
        best_memory=f"{to_gb(best.memory_bytes):.1f}",
    )
    numbers = Message("%(numbers)s%(uncertainty)s", numbers=numbers,
                      uncertainty=uncertainty(plan_.request.profile))  # fmt: skip
    if slowdown <= 1 + FULL_MARKS_WITHIN:
        template = N_("Full marks: it fits and is within %(within)s of the best step. %(numbers)s")
        text = Message(template, within=f"{FULL_MARKS_WITHIN:.0%}", numbers=numbers)
        return DesignScore(1.0, "full", text, (), cost, best, None, 0.0, slowdown,
                           front)  # fmt: skip
    blame = why.blame or "compute"
    trade = Message(
        N_(
            " It is on the Pareto front: nothing that fits is both faster and smaller, so it "
            "trades time for memory."
        )
        if front
        else ""
    )
    template = N_(
        "Partial: it fits but its step is %(slowdown)s× the best. The largest gap is %(term)s, "
        "+%(gap)s s over the best layout's. %(numbers)s%(trade)s"
    )
    # TERM_TEXT's words are in the catalogue, marked where the quiz generators name them.
    text = Message(
        template,
        slowdown=f"{slowdown:.2f}",
        term=Message(TERM_TEXT[blame]),
        gap=f"{why.blame_s:.2f}",
        numbers=numbers,
        trade=trade,
    )
    return DesignScore(best.step_time_s / cost.step_time_s, "partial", text, (), cost, best,
                       blame, why.blame_s, slowdown, front)  # fmt: skip


def record_design(
    session: Session, user_id: int, answer: DesignAnswer, result: DesignScore
) -> DesignAttempt:
    """Stores the answer with the score it was given; committed before the page says it."""
    attempt = DesignAttempt(
        user_id=user_id,
        scenario=answer.scenario,
        layout=answer.model_dump(exclude={"scenario"}),
        score=result.score,
        verdict=result.verdict,
        rules=[r.rule for r in result.rules],
    )
    session.add(attempt)
    session.commit()
    return attempt
