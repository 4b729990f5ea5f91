"""ZeRO model-states memory, stage by stage: the formula of each stage, symbolic and with the
user's numbers, and the bars that compare the stages. The memory calculator's page, the
cards' `memory` examples and the quiz's solutions show it. The inverse, the largest model
whose model states fit a device, is worked the same way (largest_model_latex).

Numbers come from app.calc.memory; this module only arranges them and writes the
formula with the user's numbers substituted.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.memory import (
    MIXED_PRECISION_ADAM,
    ZERO_STAGE_NAMES,
    LargestModel,
    ModelStates,
    PrecisionRecipe,
    model_states_all_stages,
)
from app.formatting import gb, gb_value, latex_number


@dataclass(frozen=True)
class StageView:
    states: ModelStates
    name: str
    symbolic_latex: str
    substituted_latex: str
    bar_percent: dict[str, float]  # share of the widest bar, per state

    @property
    def total_gb(self) -> str:
        return gb(self.states.total_bytes)


def _term(symbol: str, value: float, sharded: bool, params_latex: str) -> tuple[str, str]:
    if sharded:
        return (
            rf"\frac{{{symbol}\Psi}}{{N_d}}",
            rf"\frac{{{latex_number(value)} \times {params_latex}}}{{N_d}}",
        )
    return rf"{symbol}\Psi", rf"{latex_number(value)} \times {params_latex}"


def stage_views(
    params: float, dp_degree: int, recipe: PrecisionRecipe = MIXED_PRECISION_ADAM
) -> list[StageView]:
    """ZeRO stages 0-3 for `params` parameters sharded over `dp_degree` ranks."""
    stages = model_states_all_stages(params, dp_degree, recipe)
    widest = max(s.total_bytes for s in stages)
    params_latex = latex_number(params)
    views = []
    for s in stages:
        r = s.recipe
        terms = [
            _term(symbol, per_param, s.zero_stage >= threshold, params_latex)
            for symbol, per_param, threshold in (
                (latex_number(r.weight_bytes), r.weight_bytes, 3),
                (latex_number(r.grad_bytes), r.grad_bytes, 2),
                ("K", r.optimizer_bytes, 1),
            )
        ]
        symbolic = " + ".join(t[0] for t in terms)
        substituted = " + ".join(t[1] for t in terms).replace("N_d", str(dp_degree))
        views.append(
            StageView(
                states=s,
                name=ZERO_STAGE_NAMES[s.zero_stage],
                symbolic_latex=rf"M_{{{s.zero_stage}}} = {symbolic}",
                substituted_latex=rf"= {substituted} = {gb_value(s.total_bytes)}\,\text{{GB}}",
                bar_percent={
                    "weights": 100 * s.weights_bytes / widest,
                    "grads": 100 * s.grads_bytes / widest,
                    "optimizer": 100 * s.optimizer_bytes / widest,
                },
            )
        )
    return views


def largest_model_latex(best: LargestModel) -> tuple[str, str]:
    """Psi_max = (M - R) / (w / N_w + g / N_g + K / N_os): symbolic, then with the numbers."""
    r, n = best.recipe, best.dp_degree
    terms = [
        (symbol, per_param, best.zero_stage >= threshold)
        for symbol, per_param, threshold in (
            (latex_number(r.weight_bytes), r.weight_bytes, 3),
            (latex_number(r.grad_bytes), r.grad_bytes, 2),
            ("K", r.optimizer_bytes, 1),
        )
    ]
    symbolic = " + ".join(rf"\frac{{{s}}}{{N_d}}" if sharded else s for s, _, sharded in terms)
    numbers = " + ".join(
        rf"\frac{{{latex_number(v)}}}{{{n}}}" if sharded else latex_number(v)
        for _, v, sharded in terms
    )
    return (
        rf"\Psi_{{\max}} = \frac{{M - R}}{{{symbolic}}}",
        rf"= \frac{{({gb_value(best.device_bytes)} - {gb_value(best.reserve_bytes)}) \times 10^9"
        rf"\,\text{{B}}}}{{{numbers}}} = \frac{{{latex_number(best.budget_bytes)}}}"
        rf"{{{latex_number(best.bytes_per_param_per_gpu)}}} = {latex_number(best.params)}",
    )
