"""Why a layout is not the plan's best: the rules it breaks, that it does not fit, or how much
slower it is and which step term is to blame."""

from __future__ import annotations

from app.calc.messages import N_, Message
from app.calc.planner.costs import Costs
from app.calc.planner.request import STEP_TERM_WORDS, STEP_TERMS, Layout
from app.calc.planner.results import Plan, WhyNot
from app.calc.planner.rules import violations


def _named(rule: str, reason: Message) -> Message:
    # A rule's key is a name in code, the same in every language: nothing here to translate.
    return Message("%(rule)s: %(reason)s", rule=rule, reason=reason)


def why_not(plan_: Plan, layout: Layout) -> WhyNot:
    """Why `layout` is not the plan's best: the rules it breaks, that it does not fit, or how
    much slower it is and which step term, against the best layout's, is to blame."""
    req, best = plan_.request, plan_.best
    broken = violations(req, layout)
    if broken:
        reasons = Message.join("; ", (_named(r.rule, r.reason) for r in broken))
        text = Message(N_("not a valid layout (%(reasons)s)"), reasons=reasons)
        return WhyNot(layout, broken, None, best, None, None, 0.0, text)
    cost = Costs(req).cost(layout)
    if not cost.fits:
        text = Message(
            N_(
                "does not fit: needs %(need)s GB per GPU (model states %(states)s, "
                "activations %(activations)s), has %(has)s"
            ),
            need=f"{cost.memory_bytes / 1e9:.1f}",
            states=f"{cost.model_states_bytes / 1e9:.1f}",
            activations=f"{cost.activation_bytes / 1e9:.1f}",
            has=f"{req.cluster.gpu_memory_bytes / 1e9:.1f}",
        )
        return WhyNot(layout, (), cost, best, None, "memory", 0.0, text)
    if best is None:
        text = Message(N_("it fits; no layout in the plan does"))
        return WhyNot(layout, (), cost, None, None, None, 0.0, text)
    slowdown = cost.step_time_s / best.step_time_s
    mine, theirs = cost.step.terms(), best.step.terms()
    excess = {name: mine[name] - theirs[name] for name in STEP_TERMS}
    blame = max(excess, key=lambda k: excess[k])
    if slowdown <= 1 + 1e-9:
        text = Message(N_("as fast as the plan's best layout"))
    else:
        text = Message(
            N_(
                "%(slowdown)sx the best step time (%(mine)s s vs %(best)s s); the largest gap "
                "is %(term)s, +%(gap)s s over the best layout's"
            ),
            slowdown=f"{slowdown:.2f}",
            mine=f"{cost.step_time_s:.3g}",
            best=f"{best.step_time_s:.3g}",
            term=Message(STEP_TERM_WORDS[blame]),
            gap=f"{excess[blame]:.3g}",
        )
    return WhyNot(layout, (), cost, best, slowdown, blame, excess[blame], text)
