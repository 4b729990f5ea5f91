"""Generated questions on training memory: bytes per parameter, model states, activations.

Every answer comes from app.calc (precision.bytes_per_param, training.training_memory and
activations.layer_activations), so a question is graded by what the training-memory
calculator shows for the same inputs. Choices hold numbers only, so a recipe, an optimizer,
a model or a recompute mode is drawn as an index into the tuples below. Inputs a question
does not draw take the defaults in `_DEFAULTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.calc.activations import RECOMPUTE_MODES, ActivationSetup, layer_activations
from app.calc.model import PRESETS
from app.calc.precision import bytes_per_param
from app.calc.training import (
    MODEL_STATE_KEYS,
    MemoryReport,
    Parallelism,
    TrainingSetup,
    training_memory,
)
from app.calc.units import GB
from app.formatting import latex_number
from app.i18n import N_, gettext, translate
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import (
    OPTIMIZER_WORDS,
    RECOMPUTE_WORDS,
    ZERO_STAGE_WORDS,
    parameters,
    say,
)

# Index -> name; YAML items draw the index.
MODELS = (
    "llama2-7b",  # 0
    "llama3-8b",  # 1
    "llama2-13b",  # 2
    "llama2-70b",  # 3
    "llama3-70b",  # 4
    "gpt3-175b",  # 5
    "mistral-7b",  # 6
    "llama3-405b",  # 7
)
RECIPE_ORDER = ("mixed_bf16", "fp32", "bf16", "mixed_bf16_fp32_grads", "mixed_fp16")
OPTIMIZER_ORDER = ("adam", "sgd_momentum", "adam_8bit")
OFFLOAD_ORDER = ("none", "optimizer", "optimizer_and_params")
# Per-layer activations use the setting of Korthikanti et al. (arXiv:2205.05198, Section 4):
# GPT-3's shape (GeLU MLP of 4h, multi-head attention), 16-bit values, dropout on.
LAYER_MODEL = "gpt3-175b"

_DEFAULTS: dict[str, float] = {
    "model": 1,
    "dp": 8,
    "zero_stage": 0,
    "recipe": 0,
    "optimizer": 0,
    "offload": 0,
    "seq_len": 2048,
    "micro_batch": 1,
    "tp": 1,
    "sequence_parallel": 0,
    "recompute": 0,
    "flash_attention": 0,
}

_RECIPE_WORDS = {
    "mixed_bf16": N_("mixed-precision bf16 (bf16 weights and gradients, fp32 master weights)"),
    "mixed_fp16": N_("mixed-precision fp16 (fp16 weights and gradients, fp32 master weights)"),
    "fp32": N_("plain fp32 (fp32 weights and gradients, no master copy)"),
    "bf16": N_("pure bf16 (bf16 weights and gradients, no fp32 master copy)"),
    "mixed_bf16_fp32_grads": N_(
        "Megatron-style mixed precision (bf16 weights, fp32 main gradients, fp32 master weights)"
    ),
}
_OFFLOAD_WORDS = {
    "none": N_("no offload"),
    "optimizer": N_("optimizer offload to the CPU (ZeRO-Offload)"),
    "optimizer_and_params": N_("optimizer and parameter offload to the CPU (ZeRO-Infinity)"),
}


def _get(inputs: Mapping[str, float], name: str) -> int:
    return int(inputs.get(name, _DEFAULTS[name]))


def _bytes(value: float) -> str:
    return latex_number(value, digits=5)


def bytes_per_parameter(inputs: Mapping[str, float]) -> Solution:
    """Bytes of model state per parameter (weights, gradients, master copy, optimizer)."""
    recipe = RECIPE_ORDER[_get(inputs, "recipe")]
    optimizer = OPTIMIZER_ORDER[_get(inputs, "optimizer")]
    bpp = bytes_per_param(recipe, optimizer)
    bytes_ = gettext("bytes")
    return Solution(
        answer=bpp.total,
        prompt_fields={
            "recipe": say(_RECIPE_WORDS, recipe),
            "optimizer": say(OPTIMIZER_WORDS, optimizer),
        },
        steps_latex=[
            r"b = b_w + b_g + b_m + b_o",
            rf"b = {_bytes(bpp.weights)} + {_bytes(bpp.grads)} + {_bytes(bpp.master)}"
            rf" + {_bytes(bpp.optimizer)} = {_bytes(bpp.total)}\ \text{{{bytes_}}}",
        ],
    )


def _states_report(inputs: Mapping[str, float]) -> MemoryReport:
    offload = OFFLOAD_ORDER[_get(inputs, "offload")]
    setup = TrainingSetup(
        model=PRESETS[MODELS[_get(inputs, "model")]],
        parallel=Parallelism(
            dp=_get(inputs, "dp"),
            zero_stage=_get(inputs, "zero_stage"),
            offload_optimizer=offload != "none",
            offload_params=offload == "optimizer_and_params",
        ),
        # Model states do not depend on the batch; the smallest one keeps this cheap.
        activations=ActivationSetup(seq_len=1, micro_batch=1),
        recipe=RECIPE_ORDER[_get(inputs, "recipe")],
        optimizer=OPTIMIZER_ORDER[_get(inputs, "optimizer")],
    )
    return training_memory(setup)


def _states_fields(inputs: Mapping[str, float], report: MemoryReport) -> dict[str, str]:
    return {
        "model": report.setup.model.name,
        "params": parameters(report.params.total),
        "dp": str(report.setup.parallel.dp),
        "stage_name": say(ZERO_STAGE_WORDS, report.setup.parallel.zero_stage),
        "recipe": say(_RECIPE_WORDS, report.setup.recipe),
        "optimizer": say(OPTIMIZER_WORDS, report.setup.optimizer),
        "offload": say(_OFFLOAD_WORDS, OFFLOAD_ORDER[_get(inputs, "offload")]),
    }


def _states_steps(report: MemoryReport, on_cpu: bool) -> list[str]:
    """The model-state terms on one side (GPU or CPU): symbolic sum, each term, the total."""
    terms = [
        t
        for t in report.terms
        if t.key in MODEL_STATE_KEYS and (t.cpu_bytes if on_cpu else t.gpu_bytes)
    ]
    side = "CPU" if on_cpu else "GPU"
    total = sum(t.cpu_bytes if on_cpu else t.gpu_bytes for t in terms)
    if not terms:
        elsewhere = gettext("(every model state is elsewhere)")
        return [rf"M_\text{{{side}}} = 0\ \text{{{elsewhere}}}"]
    return [
        rf"M_\text{{{side}}} = " + " + ".join(t.formula for t in terms),
        # The term's label as the training-memory page says it, in the request's language.
        *(rf"\text{{{translate(t.label)}}}:\ {t.substituted}" for t in terms),
        rf"M_\text{{{side}}} = {total / GB:.2f}\ \text{{GB}}",
    ]


def model_states_on_gpu(inputs: Mapping[str, float]) -> Solution:
    """GB of weights, gradients, master weights and optimizer states one GPU holds."""
    report = _states_report(inputs)
    return Solution(
        answer=report.model_states_gpu_bytes / GB,
        prompt_fields=_states_fields(inputs, report),
        steps_latex=_states_steps(report, on_cpu=False),
    )


def model_states_on_cpu(inputs: Mapping[str, float]) -> Solution:
    """GB of model states one rank keeps in CPU memory under offload."""
    report = _states_report(inputs)
    cpu = sum(t.cpu_bytes for t in report.terms if t.key in MODEL_STATE_KEYS)
    return Solution(
        answer=cpu / GB,
        prompt_fields=_states_fields(inputs, report),
        steps_latex=_states_steps(report, on_cpu=True),
    )


# Korthikanti et al. (arXiv:2205.05198) Table 2: bytes one layer saves, symbolic and with
# (s, b, h, a, t) substituted, keyed by (what is stored, sequence parallelism).
_TABLE_2: dict[tuple[str, bool], tuple[str, Callable[..., str]]] = {
    ("none", False): (
        r"sbh\left(10 + \frac{24}{t} + \frac{5as}{ht}\right)",
        lambda s, b, h, a, t: (
            rf"{s}\cdot {b}\cdot {h}\left(10 + \frac{{24}}{{{t}}}"
            rf" + \frac{{5\cdot {a}\cdot {s}}}{{{h}\cdot {t}}}\right)"
        ),
    ),
    ("none", True): (
        r"sbh\left(\frac{34}{t} + \frac{5as}{ht}\right)",
        lambda s, b, h, a, t: (
            rf"{s}\cdot {b}\cdot {h}\left(\frac{{34}}{{{t}}}"
            rf" + \frac{{5\cdot {a}\cdot {s}}}{{{h}\cdot {t}}}\right)"
        ),
    ),
    ("selective", False): (
        r"sbh\left(10 + \frac{24}{t}\right)",
        lambda s, b, h, a, t: rf"{s}\cdot {b}\cdot {h}\left(10 + \frac{{24}}{{{t}}}\right)",
    ),
    ("selective", True): (
        r"sbh\,\frac{34}{t}",
        lambda s, b, h, a, t: rf"{s}\cdot {b}\cdot {h}\cdot\frac{{34}}{{{t}}}",
    ),
    ("full", False): (r"2sbh", lambda s, b, h, a, t: rf"2\cdot {s}\cdot {b}\cdot {h}"),
    ("full", True): (
        r"\frac{2sbh}{t}",
        lambda s, b, h, a, t: rf"\frac{{2\cdot {s}\cdot {b}\cdot {h}}}{{{t}}}",
    ),
}
_SP_WORDS = {
    True: N_("with sequence parallelism"),
    False: N_("without sequence parallelism"),
}


def layer_activation_megabytes(inputs: Mapping[str, float]) -> Solution:
    """MB (10^6 bytes) one GPT-3 layer saves for its backward pass, on one GPU.

    In the setting of Korthikanti et al. (GPT-3's shape, 16-bit values, dropout on), where
    app.calc.activations reduces exactly to their Table 2.
    """
    cfg = PRESETS[LAYER_MODEL]
    recompute = RECOMPUTE_MODES[_get(inputs, "recompute")]
    flash = bool(_get(inputs, "flash_attention"))
    setup = ActivationSetup(
        seq_len=_get(inputs, "seq_len"),
        micro_batch=_get(inputs, "micro_batch"),
        tp=_get(inputs, "tp"),
        sp=bool(_get(inputs, "sequence_parallel")),
        recompute=recompute,
        flash_attention=flash,
        dropout=True,
    )
    layer = layer_activations(cfg, setup)
    mode = say(RECOMPUTE_WORDS, recompute)
    if flash:
        mode = gettext("{mode}, with FlashAttention").format(mode=mode)
    # FlashAttention never stores the s x s scores: the bytes of selective recompute.
    stored = "selective" if flash and recompute == "none" else recompute
    symbolic, substitute = _TABLE_2[(stored, setup.sp)]
    s, b, h, a, t = setup.seq_len, setup.micro_batch, cfg.hidden, cfg.heads, setup.tp
    return Solution(
        answer=layer.total / 1e6,
        prompt_fields={
            "model": cfg.name,
            "seq_len": str(s),
            "micro_batch": str(b),
            "tp": str(t),
            "sp": say(_SP_WORDS, setup.sp),
            "mode": mode,
        },
        steps_latex=[
            rf"A_\text{{layer}} = {symbolic}",
            rf"A_\text{{layer}} = {substitute(s, b, h, a, t)} = {layer.total / 1e6:,.2f}"
            r"\ \text{MB}",
        ],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "training.bytes_per_parameter": bytes_per_parameter,
    "training.model_states_on_gpu": model_states_on_gpu,
    "training.model_states_on_cpu": model_states_on_cpu,
    "training.layer_activation_megabytes": layer_activation_megabytes,
}
