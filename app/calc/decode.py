"""How long one decode step of a serving replica takes at least: the roofline's lower bound on
one GPU of the replica.

A decode step produces one token for each of the b sequences decoded together. Each GPU of a
t-way tensor-parallel replica reads its share of the weights and its KV cache once (memory
per GPU, app.calc.inference) and does a t-th of the step's forward FLOPs, b tokens of
2N_active + 4 n_layer n_ctx d_attn each (Kaplan et al. 2020, Table 1, with the attention count
of app.calc.flops over the whole context held). The step takes at least the longer of the two
(app.calc.roofline: max(FLOPs / peak, bytes / bandwidth)); at small batches the bytes win,
which is why decoding is memory-bound ("All About Transformer Inference", How To Scale Your
Model: each step must load the weights and the KV cache from HBM). The tensor-parallel
all-reduces, kernel launches and the attention kernel's own inefficiency are not counted, so
measured steps are longer; this is the floor the interview question reasons from.

A part with no peak for the weights' precision (an A100 has no fp8 tensor cores) runs them at
its bf16 rate, as the weights are cast up before the matmul.
"""

from __future__ import annotations

from app.calc.flops import forward_flops_per_token
from app.calc.hardware import Accelerator, peak_flops
from app.calc.inference import InferenceMemory
from app.calc.model import count_params
from app.calc.roofline import Operation, Roofline, roofline


def decode_step(memory: InferenceMemory, accelerator: Accelerator) -> Roofline:
    """The roofline of one decode step on one GPU of the replica `memory` describes (its
    setup: model, tp, context, batch, weight precision)."""
    setup = memory.setup
    cfg = setup.model
    active = setup.params if setup.params is not None else count_params(cfg).active
    per_token = forward_flops_per_token(active, cfg.layers, setup.context,
                                        cfg.heads * cfg.dim_per_head)  # fmt: skip
    read = memory.term("weights").bytes_ + memory.term("kv_cache").bytes_
    step = Operation("decode step", setup.batch * per_token / setup.tp, read,
                     r"b\,(2N_{active} + 4\,n_{layer} n_{ctx} d_{attn}) / t",
                     r"W / t + \text{KV cache per GPU}")  # fmt: skip
    dtype = setup.weight_dtype if setup.weight_dtype in accelerator.peak_flops else "bf16"
    return roofline(step, peak_flops(accelerator, dtype), accelerator.hbm_bytes_per_s)


def decode_step_s(memory: InferenceMemory, accelerator: Accelerator) -> float:
    """The least time one decode step can take, in seconds."""
    return decode_step(memory, accelerator).time_lower_s
