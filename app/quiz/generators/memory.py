"""Generated questions on the ZeRO model-states calculator: memory per GPU, the largest model
that fits a device (its inverse), and the bytes per parameter of FP8 recipes.

Named inputs are drawn as indices into the tuples below; a quiz file says in a comment what
each index is."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.calc.memory import largest_model, model_states_per_gpu, precision_recipe
from app.calc.precision import OPTIMIZERS, RECIPES, bytes_per_param
from app.calc.units import to_gb
from app.formatting import count_short, latex_number
from app.i18n import gettext
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import ZERO_STAGE_WORDS, say
from app.worked.memory import largest_model_latex, stage_views

# Index tables for drawn inputs.
RECIPE_ORDER = ("mixed_bf16", "fp8_te", "fp8_te_primary", "fp8_deepseek_v3")
# 0 mixed_bf16, 1 fp8_te, 2 fp8_te_primary, 3 fp8_deepseek_v3
OPTIMIZER_ORDER = ("adam", "adam_bf16")  # 0 adam (fp32 m, v), 1 adam_bf16


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


def largest_model_billions(inputs: Mapping[str, float]) -> Solution:
    """Billions of parameters whose model states fit `device_gb` less `reserve_gb` at a ZeRO
    stage on `dp_degree` ranks (app.calc.memory.largest_model, the calculator's inverse)."""
    stage, dp = int(inputs["zero_stage"]), int(inputs["dp_degree"])
    recipe = RECIPE_ORDER[int(inputs.get("recipe", 0))]
    device, reserve = float(inputs["device_gb"]), float(inputs.get("reserve_gb", 0))
    best = largest_model(device * 1e9, dp, stage, precision_recipe(recipe, "adam"), reserve * 1e9)
    return Solution(
        answer=best.params / 1e9,
        prompt_fields={
            "device": f"{device:g} GB",
            "reserve": f"{reserve:g} GB",
            "dp_degree": str(dp),
            "stage_name": say(ZERO_STAGE_WORDS, stage),
            "recipe": say(RECIPES, recipe),
        },
        steps_latex=list(largest_model_latex(best)),
    )


def fp8_bytes_per_param(inputs: Mapping[str, float]) -> Solution:
    """Bytes of model state per parameter for a recipe (FP8 ones included) and optimizer."""
    recipe = RECIPE_ORDER[int(inputs["recipe"])]
    optimizer = OPTIMIZER_ORDER[int(inputs.get("optimizer", 0))]
    b = bytes_per_param(recipe, optimizer)
    bytes_ = gettext("bytes")

    def tex(value: float) -> str:
        return latex_number(value, digits=5)

    return Solution(
        answer=b.total,
        prompt_fields={"recipe": say(RECIPES, recipe), "optimizer": say(OPTIMIZERS, optimizer)},
        steps_latex=[
            r"b = b_w + b_{\text{FP8}} + b_g + b_m + b_o",
            rf"b = {tex(b.weights)} + {tex(b.fp8_copies)} + {tex(b.grads)} + {tex(b.master)}"
            rf" + {tex(b.optimizer)} = {tex(b.total)}\ \text{{{bytes_}}}",
        ],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "memory.model_states_per_gpu": memory_model_states_per_gpu,
    "memory.largest_model_billions": largest_model_billions,
    "memory.fp8_bytes_per_param": fp8_bytes_per_param,
}
