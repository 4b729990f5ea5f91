"""Generated questions on the ZeRO model-states calculator."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.calc.memory import model_states_per_gpu
from app.calc.units import to_gb
from app.formatting import count_short
from app.i18n import gettext
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import ZERO_STAGE_WORDS, say
from app.worked.memory import stage_views


def memory_model_states_per_gpu(inputs: Mapping[str, float]) -> Solution:
    params, dp_degree, stage = (
        float(inputs["params"]),
        int(inputs["dp_degree"]),
        int(inputs["zero_stage"]),
    )
    states = model_states_per_gpu(params, dp_degree, stage)
    view = stage_views(params, dp_degree)[stage]
    return Solution(
        answer=to_gb(states.total_bytes),
        prompt_fields={
            "params": gettext("{count}-parameter").format(count=count_short(params)),
            "dp_degree": str(dp_degree),
            "stage_name": say(ZERO_STAGE_WORDS, stage),
        },
        steps_latex=[view.symbolic_latex, view.substituted_latex],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "memory.model_states_per_gpu": memory_model_states_per_gpu,
}
