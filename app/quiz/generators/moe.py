"""Generated questions on mixture-of-experts load: what a GPU whose experts are popular saves.

app.calc.activations assumes balanced routing: the routed experts on a GPU receive top_k
copies of each of the n_tok tokens the GPU holds. A GPU whose experts receive `load` times that
share stores what the same formula gives with top_k * load routed copies (shared experts are
unchanged), which is how the card content/cards/moe-load-balancing.md reads the training-memory
calculator. The model is Mixtral 8x7B (no shared experts), one GPU per expert, no TP.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from app.calc.activations import ActivationSetup, layer_activations
from app.calc.model import PRESETS
from app.formatting import latex_number
from app.quiz.generators.solution import Solution

MODEL = "mixtral-8x7b"
# Inner tensors a SwiGLU expert saves per token (gate, up and their product: app.calc.activations).
SWIGLU_INNER_TENSORS = 3


def moe_layer_activation_mb(inputs: Mapping[str, float]) -> Solution:
    """MB (10^6 bytes) one MoE layer's block saves for backward on a GPU whose experts receive
    `load` times their balanced share of token copies (bf16, no dropout, no recomputation)."""
    base = PRESETS[MODEL]
    load = int(inputs["load"])
    copies = base.top_k * load
    if copies > base.experts:
        raise ValueError(f"{copies} copies per token exceed the {base.experts} experts")
    setup = ActivationSetup(
        seq_len=int(inputs["seq_len"]),
        micro_batch=int(inputs["micro_batch"]),
        recompute="none",
        flash_attention=True,
        dropout=False,
    )
    hot = layer_activations(replace(base, top_k=copies), setup)
    n, h, f, value = setup.seq_len * setup.micro_batch, base.hidden, base.ffn_hidden, 2
    return Solution(
        answer=hot.mlp / 1e6,
        prompt_fields={
            "model": base.name,
            "experts": str(base.experts),
            "top_k": str(base.top_k),
            "hidden": f"{h:,}",
            "ffn_hidden": f"{f:,}",
            "seq_len": f"{setup.seq_len:,}",
            "micro_batch": str(setup.micro_batch),
            "load": str(load),
        },
        steps_latex=[
            r"A_\text{MoE} = B\,n h + c k \left(B\,n h + "
            rf"{SWIGLU_INNER_TENSORS}B\,n f\right)",
            rf"A_\text{{MoE}} = {value} \cdot {n} \cdot {h} + {load} \cdot {base.top_k} "
            rf"\left({value} \cdot {n} \cdot {h} + {SWIGLU_INNER_TENSORS} \cdot {value} "
            rf"\cdot {n} \cdot {f}\right) = {latex_number(hot.mlp / 1e6, digits=5)}"
            r"\ \text{MB}",
        ],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "moe.moe_layer_activation_mb": moe_layer_activation_mb,
}
