"""Generated questions on the inference-memory calculator (app.calc.inference).

Every answer comes from `inference_memory`, and the worked steps are the formula and the
substituted numbers that the calculator itself writes for each term, so a question is graded
and explained by what /calculators/inference-memory shows for the same inputs. Models and
dtypes are drawn as indexes into the tuples below; inputs a question does not draw take the
calculator's defaults (InferenceSetup: bf16 weights and cache, t = 1, 4096 tokens, batch 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.calc.inference import (
    KV_BYTES,
    WEIGHT_BYTES,
    InferenceMemory,
    InferenceSetup,
    inference_memory,
)
from app.calc.model import PRESETS, ModelConfig
from app.calc.units import GB
from app.i18n import gettext
from app.quiz.generators.solution import Solution
from app.quiz.generators.training_memory import MODELS
from app.quiz.generators.words import parameters

KV_DTYPE_ORDER = ("bf16", "fp8", "fp32")
WEIGHT_DTYPE_ORDER = ("bf16", "fp8", "int8", "int4")

# MLA models by index: (name, layers, heads, nominal parameters). DeepSeek-V2: 60 layers, 128
# heads, 236B (arXiv:2405.04434, Section 3.1.2); DeepSeek-V3: 61 layers, 128 heads, 671B
# (arXiv:2412.19437, Section 4.2). Both: kv_lora_rank 512, qk_rope_head_dim 64, heads of 128.
MLA_MODELS = (("DeepSeek-V2", 60, 128, 236e9), ("DeepSeek-V3", 61, 128, 671e9))


def _report(inputs: Mapping[str, float]) -> InferenceMemory:
    fields: dict[str, Any] = {"model": PRESETS[MODELS[int(inputs["model"])]]}
    for name in ("tp", "context", "batch"):
        if name in inputs:
            fields[name] = int(inputs[name])
    if "kv_dtype" in inputs:
        fields["kv_dtype"] = KV_DTYPE_ORDER[int(inputs["kv_dtype"])]
    if "weight_dtype" in inputs:
        fields["weight_dtype"] = WEIGHT_DTYPE_ORDER[int(inputs["weight_dtype"])]
    return inference_memory(InferenceSetup(**fields))


def _fields(report: InferenceMemory) -> dict[str, str]:
    setup, cfg = report.setup, report.setup.model
    return {
        "model": cfg.name,
        "params": parameters(report.total_params),
        "shape": gettext(
            "L = {layers} layers, {heads} query heads, k = {kv_heads} KV heads of dimension "
            "d = {head_dim}"
        ).format(
            layers=cfg.layers, heads=cfg.heads, kv_heads=cfg.kv_heads, head_dim=cfg.dim_per_head
        ),
        "tp": str(setup.tp),
        "context": f"{setup.context:,}",
        "batch": str(setup.batch),
        "kv_dtype": setup.kv_dtype,
        "weight_dtype": setup.weight_dtype,
    }


def kv_bytes_per_token(inputs: Mapping[str, float]) -> Solution:
    """Bytes of K and V one token adds to the cache, over every layer and KV head."""
    report = _report(inputs)
    cfg, setup = report.setup.model, report.setup
    b_kv = KV_BYTES[setup.kv_dtype]
    bytes_of_dtype = gettext("bytes ({dtype})").format(dtype=setup.kv_dtype)
    return Solution(
        answer=report.kv_bytes_per_token_model,
        prompt_fields=_fields(report),
        steps_latex=[
            r"2\,L\,k\,d\,B_{kv}",
            rf"2\times{cfg.layers}\times{cfg.kv_heads}\times{cfg.dim_per_head}\times{b_kv:g}"
            rf" = {report.kv_bytes_per_token_model:.0f}\ \text{{{bytes_of_dtype}}}",
        ],
    )


def kv_cache_per_gpu(inputs: Mapping[str, float]) -> Solution:
    """GB of KV cache one GPU holds for the batch at the given context."""
    report = _report(inputs)
    term = report.term("kv_cache")
    # app.calc writes "replicated" when there are fewer KV heads than tp ranks.
    replicated = gettext("replicated")
    replicated = rf"\text{{: {replicated}}}"
    return Solution(
        answer=term.bytes_ / GB,
        prompt_fields=_fields(report),
        steps_latex=[term.formula, term.substituted.replace(r"\text{: replicated}", replicated)],
    )


def weights_per_gpu(inputs: Mapping[str, float]) -> Solution:
    """GB of weights one GPU holds under t-way tensor parallelism."""
    report = _report(inputs)
    term = report.term("weights")
    return Solution(
        answer=term.bytes_ / GB,
        prompt_fields=_fields(report),
        steps_latex=[term.formula, term.substituted],
    )


def _mla_report(inputs: Mapping[str, float]) -> InferenceMemory:
    name, layers, heads, params = MLA_MODELS[int(inputs["model"])]
    # Only the layer count and heads matter to the cache and the TP check; the rest of the
    # shape is a placeholder the nominal parameter count stands in for.
    shape = ModelConfig(layers=layers, hidden=128 * heads, heads=heads, kv_heads=heads,
                        ffn_hidden=1, vocab=1, name=name)  # fmt: skip
    fields: dict[str, Any] = {"model": shape, "attention": "mla", "params": params}
    if "tp" in inputs:
        fields["tp"] = int(inputs["tp"])
    if "kv_dtype" in inputs:
        fields["kv_dtype"] = KV_DTYPE_ORDER[int(inputs["kv_dtype"])]
    return inference_memory(InferenceSetup(**fields, gpu_memory_bytes=1e13))


def mla_kv_bytes_per_gpu_per_token(inputs: Mapping[str, float]) -> Solution:
    """Bytes of MLA cache one token adds on each tensor-parallel GPU: the whole latent."""
    report = _mla_report(inputs)
    setup = report.setup
    b_kv = KV_BYTES[setup.kv_dtype]
    bytes_of_dtype = gettext("bytes ({dtype})").format(dtype=setup.kv_dtype)
    return Solution(
        answer=report.kv_bytes_per_token_gpu,
        prompt_fields={
            "model": setup.model.name,
            "layers": str(setup.model.layers),
            "tp": str(setup.tp),
            "kv_dtype": setup.kv_dtype,
        },
        steps_latex=[
            r"(d_c + d_h^R)\,L\,B_{kv}",
            rf"({setup.kv_lora_rank}+{setup.qk_rope_head_dim})\times{setup.model.layers}"
            rf"\times{b_kv:g} = {report.kv_bytes_per_token_gpu:.0f}\ \text{{{bytes_of_dtype}}}",
        ],
    )


NOMINAL_PARAMS = (7e9, 70e9, 405e9)


def nominal_weights_per_gpu(inputs: Mapping[str, float]) -> Solution:
    """GB of weights per GPU from a nominal parameter count, a dtype and t: no shape needed."""
    params = NOMINAL_PARAMS[int(inputs["params"])]
    dtype = WEIGHT_DTYPE_ORDER[int(inputs["weight_dtype"])]
    tp = int(inputs["tp"])
    # The shape is Llama 2 70B's (its 64 heads split for every t drawn); only the count is used.
    report = inference_memory(
        InferenceSetup(model=PRESETS["llama2-70b"], params=params, weight_dtype=dtype, tp=tp)
    )
    term = report.term("weights")
    return Solution(
        answer=term.bytes_ / GB,
        prompt_fields={
            "params": parameters(round(params)),
            "weight_dtype": dtype,
            "bytes": f"{WEIGHT_BYTES[dtype]:g}",
            "tp": str(tp),
        },
        steps_latex=[term.formula, term.substituted],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "inference.kv_bytes_per_token": kv_bytes_per_token,
    "inference.kv_cache_per_gpu": kv_cache_per_gpu,
    "inference.weights_per_gpu": weights_per_gpu,
    "inference.mla_kv_bytes_per_gpu_per_token": mla_kv_bytes_per_gpu_per_token,
    "inference.nominal_weights_per_gpu": nominal_weights_per_gpu,
}
