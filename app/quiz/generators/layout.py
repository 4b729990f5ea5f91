"""Generated questions on the layout planner (app.calc.planner): pick the layout to launch.

A question is a scenario (app.quiz.layouts.SCENARIOS) and a seed. Four layouts are shown: the
planner's best, and three distractors, each wrong for a reason the planner states: one breaks
a rule (`violations`), one does not fit in memory (`why_not`: how many GB over), one fits but
is at least MIN_SLOWDOWN slower (`why_not`: which step term, by how many seconds). The seed
picks which distractor of each kind and the order; the answer is the best layout's number.
Nothing is stored: every number is the planner's, recomputed when the question is drawn and
when it is graded. The words are the request's language (the layouts, the option names and the
notes, a rule's reason with its numbers included); the answer is a number, whatever the language.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from app.calc.planner import RULES, Layout, LayoutCost, Plan, PlanRequest, violations, why_not
from app.calc.planner.request import STEP_TERM_WORDS
from app.calc.units import to_gb
from app.i18n import N_, gettext, say
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import RECOMPUTE_WORDS, link_name
from app.quiz.layouts import (
    SCHEDULE_TEXT,
    TERM_TEXT,
    layout_text,
    scenario_fields,
    scenario_plan,
)

# A distractor that "fits but is slower" is at least MIN_SLOWDOWN slower than the best, so the
# answer does not hinge on the planner's second decimal, and at most MAX_SLOWDOWN, so it is a
# layout someone might launch.
MIN_SLOWDOWN = 1.05
MAX_SLOWDOWN = 3.0

Verdict = Literal["best", "breaks_rule", "does_not_fit", "slower"]

# app.quiz.layouts' names of the schedules and the rules this generator's distractors break,
# marked for translation (in English they are the same text); the step terms' are app.calc's.
TERM_WORDS = STEP_TERM_WORDS
LAYOUT_SCHEDULE_WORDS = {**SCHEDULE_TEXT, "interleaved": N_("interleaved 1F1B")}
RULE_WORDS = {
    **RULES,
    "tp_within_node": N_(
        "tp must divide the GPUs per node: TP all-reduces 4 times per layer per micro-batch "
        "and needs NVLink (Narayanan et al. arXiv:2104.04473, takeaway #1)"
    ),
    "ep_needs_moe": N_("ep > 1 needs a mixture-of-experts model"),
    "micro_batch_divides": N_("the micro-batch must divide each data-parallel replica's sequences"),
    "zero_or_distributed_optimizer": N_(
        "Megatron's distributed optimizer already shards like ZeRO-1; pick one"
    ),
}


@dataclass(frozen=True)
class LayoutOption:
    layout: Layout
    verdict: Verdict
    note: str  # Markdown: the planner's numbers and why this option is (not) the answer
    rule: str | None = None  # breaks_rule: the first rule it breaks (a key of RULES)
    over_bytes: float = 0.0  # does_not_fit: memory per GPU beyond the GPU's
    blame: str | None = None  # slower: the step term most to blame
    slowdown: float = 1.0  # slower: step time / best step time


def _gb(value: float) -> str:
    return f"{to_gb(value):.1f} GB"


def _term(key: str) -> str:
    return gettext(TERM_WORDS[key]) if key in TERM_WORDS else TERM_TEXT[key]


def _breakdown(cost: LayoutCost) -> str:
    terms = [f"{_term(k)} {v:.2f} s" for k, v in cost.step.terms().items() if v > 0.005]
    return ", ".join(terms)


def layout_words(layout: Layout) -> str:
    """app.quiz.layouts.layout_text in the request's language: 'DP 4 × TP 8 × PP 2, ZeRO-1, no
    recompute, micro-batch 1, 1F1B' (the same text in English)."""
    degrees = [f"DP {layout.dp}"] + [
        f"{name.upper()} {getattr(layout, name)}"
        for name in ("tp", "pp", "cp", "ep")
        if getattr(layout, name) > 1
    ]
    if layout.distributed_optimizer:
        sharding = gettext("distributed optimizer")
        if layout.zero_stage:  # a rule breaker: both named, or the option hides what it breaks
            sharding += f" + ZeRO-{layout.zero_stage}"
    else:
        sharding = f"ZeRO-{layout.zero_stage}" if layout.zero_stage else gettext("no ZeRO")
    schedule = LAYOUT_SCHEDULE_WORDS.get(layout.schedule)
    schedule = gettext(schedule) if schedule else layout.schedule
    if layout.virtual_stages > 1:
        schedule += f" (v = {layout.virtual_stages})"
    recompute = RECOMPUTE_WORDS.get(layout.recompute)
    parts = [
        " × ".join(degrees),
        sharding,
        gettext(recompute) if recompute else layout.recompute,
        gettext("micro-batch {n}").format(n=layout.micro_batch),
    ]
    if layout.pp > 1 or layout.schedule != "1f1b" or layout.virtual_stages > 1:
        parts.append(schedule)
    return ", ".join(parts)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _rule_breakers(req: PlanRequest, best: Layout) -> list[Layout]:
    """Plausible layouts that each break at least one rule (checked by the caller)."""
    n, per_node = req.cluster.gpus, req.cluster.gpus_per_node
    found = []
    if n % (2 * per_node) == 0:  # TP across two nodes
        found.append(Layout(dp=n // (2 * per_node), tp=2 * per_node, zero_stage=1))
    if req.model.experts <= 1 and (best.dp * best.cp) % 2 == 0:
        found.append(replace(best, ep=2))  # expert parallelism on a dense model
    found.append(replace(best, zero_stage=1, distributed_optimizer=True))
    found.append(replace(best, micro_batch=3))
    for pp in _divisors(n):  # a pipeline that does not split the layers evenly
        rest = n // (pp * best.tp * best.cp)
        if req.model.layers % pp and n % (pp * best.tp * best.cp) == 0 and pp <= 16:
            found.append(replace(best, dp=rest, pp=pp, schedule="1f1b", virtual_stages=1))
            break
    return found


def _too_big(req: PlanRequest, best: Layout) -> list[Layout]:
    """Plausible valid layouts that may not fit (checked by the caller)."""
    n = req.cluster.gpus
    per_replica = req.global_batch_sequences // best.dp
    return [
        Layout(dp=n),  # plain DDP
        Layout(dp=n, zero_stage=1),
        replace(best, zero_stage=0, distributed_optimizer=False, recompute="none"),
        replace(best, micro_batch=min(per_replica, 8 * best.micro_batch), recompute="none"),
        replace(best, micro_batch=per_replica, recompute="none"),
    ]


def _slower(plan_: Plan, best: Layout) -> list[Layout]:
    """Plausible valid layouts that may fit but run slower (checked by the caller)."""
    req = plan_.request
    n, per_node = req.cluster.gpus, req.cluster.gpus_per_node
    found = [c.layout for c in plan_.pareto[1:]]
    found.append(replace(best, recompute="full"))
    if best.pp > 1:
        found.append(replace(best, schedule="1f1b", virtual_stages=1))
        # Few, large micro-batches: m = pp leaves the bubble (p - 1)/m nearly a whole step.
        per_replica = req.global_batch_sequences // best.dp
        if per_replica % best.pp == 0:
            big = per_replica // best.pp
            found += [replace(best, micro_batch=big, recompute=r) for r in ("none", "full")]
    if n % (2 * per_node) == 0:
        textbook = Layout(dp=n // (2 * per_node), tp=per_node, pp=2, zero_stage=1)  # 3D
        found += [textbook, replace(textbook, recompute="full")]
    found += [Layout(dp=n, zero_stage=3, recompute="full"), Layout(dp=n, zero_stage=3)]
    return found


def _pick(rng: random.Random, options: list[LayoutOption], what: str) -> LayoutOption:
    if not options:
        raise ValueError(f"the planner gave no layout that {what}")
    return rng.choice(options)


def layout_options(scenario: int, seed: int) -> list[LayoutOption]:
    """The four options of a question, in the order shown; deterministic in (scenario, seed)."""
    plan_ = scenario_plan(scenario)
    req, best = plan_.request, plan_.best
    if best is None:
        raise ValueError(f"scenario {scenario}: no layout fits")
    capacity = req.cluster.gpu_memory_bytes
    rng = random.Random(f"layout:{scenario}:{seed}")
    shown = {layout_text(best.layout)}

    def fresh(layout: Layout) -> bool:
        return layout_text(layout) not in shown

    broken = []
    for lay in filter(fresh, _rule_breakers(req, best.layout)):
        rules = violations(req, lay)
        if rules:
            first = rules[0]
            note = gettext("**Breaks a rule**, `{rule}`: {reason}. The rule: {rule_text}.").format(
                rule=first.rule,
                reason=say(first.reason),
                rule_text=gettext(RULE_WORDS[first.rule]),
            )
            broken.append(LayoutOption(lay, "breaks_rule", note, rule=first.rule))
    pick = _pick(rng, broken, "breaks a rule")
    shown.add(layout_text(pick.layout))
    chosen = [pick]

    too_big = []
    for lay in filter(fresh, _too_big(req, best.layout)):
        why = why_not(plan_, lay)
        if why.cost is not None and not why.cost.fits:
            c = why.cost
            over = c.memory_bytes - capacity
            note = gettext(
                "**Does not fit**: needs {memory} per GPU (model states {states}, activations "
                "{activations}, other {other}), {over} more than the {capacity} a GPU has."
            ).format(
                memory=_gb(c.memory_bytes),
                states=_gb(c.model_states_bytes),
                activations=_gb(c.activation_bytes),
                other=_gb(c.other_bytes),
                over=_gb(over),
                capacity=_gb(capacity),
            )
            too_big.append(LayoutOption(lay, "does_not_fit", note, over_bytes=over))
    pick = _pick(rng, too_big, "does not fit")
    shown.add(layout_text(pick.layout))
    chosen.append(pick)

    by_blame: dict[str, list[LayoutOption]] = {}
    for lay in filter(fresh, _slower(plan_, best.layout)):
        why = why_not(plan_, lay)
        if why.cost is None or not why.cost.fits or why.slowdown is None:
            continue
        if not MIN_SLOWDOWN <= why.slowdown <= MAX_SLOWDOWN or why.blame is None:
            continue
        note = gettext(
            "**Fits but slower**: {memory} per GPU; step {step} s, {slowdown}× the best. The "
            "largest gap is {term}, +{gap} s over the best layout's ({breakdown})."
        ).format(
            memory=_gb(why.cost.memory_bytes),
            step=f"{why.cost.step_time_s:.2f}",
            slowdown=f"{why.slowdown:.2f}",
            term=_term(why.blame),
            gap=f"{why.blame_s:.2f}",
            breakdown=_breakdown(why.cost),
        )
        option = LayoutOption(lay, "slower", note, blame=why.blame, slowdown=why.slowdown)
        by_blame.setdefault(why.blame, []).append(option)
    blames = sorted(by_blame)
    if not blames:
        raise ValueError(f"scenario {scenario}: no fitting layout in the slowdown range")
    chosen.append(rng.choice(by_blame[rng.choice(blames)]))

    note = gettext(
        "**The planner's best**: fits in {memory} of {capacity}; step {step} s ({breakdown}), "
        "MFU {mfu}."
    ).format(
        memory=_gb(best.memory_bytes),
        capacity=_gb(capacity),
        step=f"{best.step_time_s:.2f}",
        breakdown=_breakdown(best),
        mfu=f"{best.mfu:.0%}",
    )
    chosen.append(LayoutOption(best.layout, "best", note))
    rng.shuffle(chosen)
    return chosen


def pick_the_layout(inputs: Mapping[str, float]) -> Solution:
    """The number (1-4) of the layout to launch: valid, fits, and the shortest step."""
    scenario, seed = int(inputs["scenario"]), int(inputs["seed"])
    options = layout_options(scenario, seed)
    answer = next(i for i, o in enumerate(options, 1) if o.verdict == "best")
    best = scenario_plan(scenario).best
    assert best is not None
    capacity_gb = to_gb(scenario_plan(scenario).request.cluster.gpu_memory_bytes)
    fields = scenario_fields(scenario)
    machines = scenario_plan(scenario).request.cluster
    fields["intra_node"] = link_name(machines.intra_node)
    fields["inter_node"] = link_name(machines.inter_node)
    fields["options"] = "\n".join(
        f"{i}. {layout_words(o.layout)}" for i, o in enumerate(options, 1)
    )
    substituted = " + ".join(f"{v:.2f}" for v in best.step.terms().values())
    chosen = gettext("layout {n}").format(n=answer)
    return Solution(
        answer=answer,
        prompt_fields=fields,
        steps_latex=[
            r"t_\text{step} = t_\text{compute} + t_\text{recompute} + t_\text{TP} + "
            r"t_\text{CP/EP} + t_\text{PP} + t_\text{DP} + t_\text{bubble},\quad "
            rf"M_\text{{GPU}} \le {capacity_gb:.0f}\ \text{{GB}}",
            rf"\text{{{chosen}}}: t_\text{{step}} = {substituted} = "
            rf"{best.step_time_s:.2f}\ \text{{s}}",
        ],
        options=tuple(gettext("Layout {n}").format(n=i) for i in range(1, len(options) + 1)),
        option_notes=tuple(o.note for o in options),
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "layout.pick_the_layout": pick_the_layout,
}
