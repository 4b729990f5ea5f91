"""Bytes per parameter for each precision recipe and optimizer, and why sources disagree.

A recipe fixes how the model's own weights and gradients are stored and whether an fp32
master copy of the weights exists; an optimizer fixes its own state per parameter:

    recipe                  weights  grads  master   source   (+ FP8 GEMM copies)
    fp32                    4        4      0        plain fp32 training
    mixed_fp16, mixed_bf16  2        2      4        ZeRO (arXiv:1910.02054) Section 3.1
    bf16 (pure)             2        2      0        no master copy (HTSYM training.md)
    mixed_bf16_fp32_grads   2        4      4        Megatron-LM dist_optimizer.md table
    deepspeed_bf16          2        2+4    4        DeepSpeed's BF16_Optimizer (ZeRO 0-1)
    fp8_te                  2        2      4        Transformer Engine FP8 (Hopper): bf16
                                                     weights, + 2 B: cached FP8 copy + transpose
    fp8_te_primary          1        2      4        TE quantized_model_init: FP8 weights,
                                                     + 1 B: their FP8 transpose
    fp8_deepseek_v3         1        4      4        DeepSeek-V3 (arXiv:2412.19437) 3.3

    optimizer      state bytes   source
    adam           8 (m, v fp32)   Kingma & Ba 2015; ZeRO Section 3.1
    sgd_momentum   4 (momentum)    torch.optim.SGD momentum_buffer
    adam_8bit      2 (m, v 8-bit)  Dettmers et al., arXiv:2110.02861
    adam_bf16      4 (m, v bf16)   DeepSeek-V3, arXiv:2412.19437, Section 3.3.3

FP8 recipes (app.calc.precision's fp8_* rows) change the weights' bytes, not the optimizer's:
the GEMMs read FP8 operands, but someone must hold the high-precision weights the update
writes. Transformer Engine by default keeps the bf16 parameter and quantizes it into a cached
FP8 workspace (transformer_engine/pytorch/module/base.py:792 quantize_weight, cached across
micro-batches, linear.py:2032), row-wise for the forward GEMM and, when a backward follows,
column-wise too (linear.py:467): on Hopper the column-wise copy is an FP8 transpose, 1 B more.
With quantized_model_init (quantization.py:878) the module holds "only quantized copies of its
parameters" and the optimizer's fp32 master is the only high-precision copy. Both at
NVIDIA/TransformerEngine@d0067d0d. Per-tensor scales are a few bytes per tensor and are left
out (MXFP8 would add 1/32 B per value per direction).

The optimizer's bytes do not depend on the recipe (a pure-bf16 run here keeps fp32 Adam
moments, as HTSYM's "10 bytes per parameter" does). 8-bit Adam also stores one fp32
absolute maximum per block of 2048 values per state (4/2048 B per state per parameter,
arXiv:2110.02861 Section 2); that 0.4 % is left out.

The ZeRO paper's K is master + optimizer (12 for mixed-precision Adam), which is what
ZeRO stage 1 and Megatron's distributed optimizer shard.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.hardware import ACCELERATORS, peak_flops
from app.calc.units import GB, GIB

RECIPES = {
    "fp32": "fp32 weights and gradients, no master copy",
    "mixed_fp16": "mixed precision: fp16 weights and gradients, fp32 master weights",
    "mixed_bf16": "mixed precision: bf16 weights and gradients, fp32 master weights",
    "bf16": "pure bf16: bf16 weights and gradients, no master copy",
    "mixed_bf16_fp32_grads": "Megatron-LM: bf16 weights, fp32 main gradients, fp32 master weights",
    "deepspeed_bf16": "DeepSpeed bf16: bf16 weights and gradients, a whole fp32 gradient copy, "
    "fp32 master weights",
    "fp8_te": "FP8 (Transformer Engine, Hopper): bf16 weights + FP8 copy and transpose, bf16 "
    "gradients, fp32 master weights",
    "fp8_te_primary": "FP8 primary weights (TE quantized_model_init): FP8 weights and transpose, "
    "bf16 gradients, fp32 master weights",
    "fp8_deepseek_v3": "FP8 as DeepSeek-V3: FP8 weights for the GEMMs, fp32 gradients, fp32 "
    "master weights",
}

OPTIMIZERS = {
    "adam": "Adam / AdamW (fp32 momentum and variance)",
    "sgd_momentum": "SGD with momentum (fp32 momentum buffer)",
    "adam_8bit": "8-bit Adam (bitsandbytes, block-wise quantized m and v)",
    "adam_bf16": "Adam with bf16 momentum and variance (DeepSeek-V3)",
}

ZERO_SOURCE = "Rajbhandari et al., ZeRO (arXiv:1910.02054), Section 3.1"
MEGATRON_SOURCE = (
    "Megatron-LM docs/user-guide/features/dist_optimizer.md (bytes-per-parameter table)"
)
DEEPSPEED_BF16_SOURCE = (
    "DeepSpeed deepspeed/runtime/bf16_optimizer.py, BF16_Optimizer (bf16 with ZeRO stage 0 or "
    "1, as BLOOM trained): fp32_groups_gradients_flat is torch.zeros_like(the whole flat bf16 "
    "group, dtype=float32), and backward() leaves the bf16 .grad tensors it accumulates from"
)

TE_SOURCE = "NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch"
DEEPSEEK_V3_SOURCE = "DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv:2412.19437)"

# recipe -> (weights, grads, master, weights source, grads source, master source)
_RECIPE_BYTES: dict[str, tuple[float, float, float, str, str, str]] = {
    "fp32": (
        4,
        4,
        0,
        "fp32 weights (4 B); Megatron-LM dist_optimizer.md: fp32 params + fp32 grads = 16 B",
        "fp32 gradients (4 B)",
        "none: the weights are already fp32",
    ),
    "mixed_fp16": (
        2,
        2,
        4,
        f"fp16 weights (2 B), {ZERO_SOURCE}",
        f"fp16 gradients (2 B), {ZERO_SOURCE}",
        f"fp32 master weights (4 B), {ZERO_SOURCE}; Micikevicius et al. arXiv:1710.03740",
    ),
    "mixed_bf16": (
        2,
        2,
        4,
        f"bf16 weights (2 B), as fp16 in {ZERO_SOURCE}",
        f"bf16 gradients (2 B), as fp16 in {ZERO_SOURCE}",
        f"fp32 master weights (4 B), {ZERO_SOURCE}",
    ),
    "bf16": (
        2,
        2,
        0,
        "bf16 weights (2 B); HTSYM training.md counts bf16 params + fp32 Adam = 10 B",
        "bf16 gradients (2 B)",
        "none: pure bf16 updates the bf16 weights directly",
    ),
    "mixed_bf16_fp32_grads": (
        2,
        4,
        4,
        f"bf16 weights (2 B), {MEGATRON_SOURCE}",
        f"fp32 main gradients (4 B), {MEGATRON_SOURCE}",
        f"fp32 main (master) weights (4 B), {MEGATRON_SOURCE}",
    ),
    "deepspeed_bf16": (
        2,
        6,
        4,
        f"bf16 weights (2 B), {DEEPSPEED_BF16_SOURCE}",
        f"bf16 gradients (2 B) and an unsharded fp32 copy they accumulate into (4 B), "
        f"{DEEPSPEED_BF16_SOURCE}",
        f"fp32 master weights (4 B), sharded with the optimizer state, {DEEPSPEED_BF16_SOURCE}",
    ),
    "fp8_te": (
        2,
        2,
        4,
        f"bf16 parameters (2 B), TE's default: the module keeps 'both higher precision and "
        f"quantized copies' (quantization.py:878), {TE_SOURCE}",
        "bf16 gradients (2 B), as mixed_bf16",
        f"fp32 master weights (4 B), {ZERO_SOURCE}",
    ),
    "fp8_te_primary": (
        1,
        2,
        4,
        f"FP8 parameters (1 B): quantized_model_init (quantization.py:878) keeps 'only "
        f"quantized copies of its parameters', {TE_SOURCE}",
        "bf16 gradients (2 B), as mixed_bf16",
        f"fp32 master weights (4 B): the only high-precision copy (quantization.py:878), "
        f"{TE_SOURCE}",
    ),
    "fp8_deepseek_v3": (
        1,
        4,
        4,
        f"FP8 weights for the GEMMs, scaled per 128x128 block (1 B; the fp32 scale, 4/16384 B, "
        f"left out), {DEEPSEEK_V3_SOURCE}, Section 3.3.2; the report names no other working "
        f"copy of the weights (a bf16 one would add 2 B)",
        f"fp32 gradients (4 B): 'gradients (used for batch size accumulation) are still "
        f"retained in FP32', {DEEPSEEK_V3_SOURCE}, Section 3.3.3",
        f"fp32 master weights (4 B), {DEEPSEEK_V3_SOURCE}, Section 3.3.3",
    ),
}

# recipe -> (bytes of FP8 copies of the weights kept for the GEMMs, source); 0 for the others.
_FP8_COPIES: dict[str, tuple[float, str]] = {
    "fp8_te": (
        2,
        f"the FP8 workspace quantized from the bf16 weight (1 B, row-wise, cached across "
        f"micro-batches: module/base.py:792 quantize_weight, module/linear.py:2032) and the "
        f"column-wise copy the backward GEMM reads, an FP8 transpose on Hopper (1 B, "
        f"linear.py:467), {TE_SOURCE}",
    ),
    "fp8_te_primary": (
        1,
        f"the column-wise copy of the FP8 weight the backward GEMM reads, an FP8 transpose on "
        f"Hopper (1 B, module/linear.py:467 and base.py:792's update_usage), {TE_SOURCE}",
    ),
}
NO_FP8_COPY = "none: the GEMMs read the weights as they are stored"

_OPTIMIZER_BYTES: dict[str, tuple[float, str]] = {
    "adam": (8, f"Adam momentum + variance in fp32 (4 + 4 B), {ZERO_SOURCE}"),
    "sgd_momentum": (4, "momentum buffer in fp32 (4 B), torch.optim.SGD"),
    "adam_8bit": (
        2,
        "8-bit momentum + variance (1 + 1 B), Dettmers et al. arXiv:2110.02861; bitsandbytes",
    ),
    "adam_bf16": (
        4,
        f"AdamW momentum + variance in bf16 (2 + 2 B), {DEEPSEEK_V3_SOURCE}, Section 3.3.3",
    ),
}


@dataclass(frozen=True)
class BytesPerParam:
    """Bytes kept per parameter for each kind of model state, with where each comes from."""

    recipe: str
    optimizer_name: str
    weights: float
    grads: float
    master: float
    optimizer: float
    weights_source: str
    grads_source: str
    master_source: str
    optimizer_source: str
    fp8_copies: float = 0.0  # FP8 copies of the weights kept for the GEMMs (FP8 recipes)
    fp8_copies_source: str = NO_FP8_COPY

    @property
    def optimizer_states(self) -> float:
        """The ZeRO paper's K: everything the optimizer owns, fp32 master copy included."""
        return self.master + self.optimizer

    @property
    def weights_on_gpu(self) -> float:
        """The weights as they sit in memory: the parameters plus any FP8 copies."""
        return self.weights + self.fp8_copies

    @property
    def total(self) -> float:
        return self.weights + self.fp8_copies + self.grads + self.master + self.optimizer


def bytes_per_param(recipe: str = "mixed_bf16", optimizer: str = "adam") -> BytesPerParam:
    if recipe not in _RECIPE_BYTES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}")
    if optimizer not in _OPTIMIZER_BYTES:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
    weights, grads, master, w_src, g_src, m_src = _RECIPE_BYTES[recipe]
    opt, opt_src = _OPTIMIZER_BYTES[optimizer]
    copies, copies_src = _FP8_COPIES.get(recipe, (0.0, NO_FP8_COPY))
    return BytesPerParam(
        recipe=recipe,
        optimizer_name=optimizer,
        weights=weights,
        grads=grads,
        master=master,
        optimizer=opt,
        weights_source=w_src,
        grads_source=g_src,
        master_source=m_src,
        optimizer_source=opt_src,
        fp8_copies=copies,
        fp8_copies_source=copies_src,
    )


@dataclass(frozen=True)
class Convention:
    """One published bytes-per-parameter figure and what it counts."""

    label: str
    bytes_per_param: float
    explanation: str
    source: str


def conventions() -> list[Convention]:
    """The figures the anchors quote for Adam, rebuilt from `bytes_per_param`."""
    mixed = bytes_per_param("mixed_bf16", "adam")
    megatron = bytes_per_param("mixed_bf16_fp32_grads", "adam")
    pure = bytes_per_param("bf16", "adam")
    fp32_grad = bytes_per_param("fp32", "adam").grads
    return [
        Convention(
            label="10 B: bf16 weights + fp32 Adam moments",
            bytes_per_param=pure.weights + pure.optimizer,
            explanation="Counts only what lives for the whole step: 2 B bf16 weights + 8 B "
            "Adam m and v. No master copy, and gradients are not counted.",
            source="How To Scale Your Model, training.md ('largest model with pure DP = HBM/10')",
        ),
        Convention(
            label="16 B: ZeRO paper, mixed-precision Adam",
            bytes_per_param=mixed.total,
            explanation="2 B 16-bit weights + 2 B 16-bit gradients + K = 12 B "
            "(4 B fp32 master weights + 8 B Adam m and v).",
            source=ZERO_SOURCE,
        ),
        Convention(
            label="18 B: Megatron-LM, bf16 weights with fp32 main gradients",
            bytes_per_param=megatron.total,
            explanation="Megatron accumulates gradients in an fp32 main-gradient buffer: "
            "2 B bf16 weights + 4 B fp32 grads + 4 B fp32 master + 8 B Adam. Its distributed "
            "optimizer shards master + Adam: 6 + 12/d.",
            source=MEGATRON_SOURCE,
        ),
        Convention(
            label="18 B: DeepSpeed ZeRO-2 estimator's sharded part (2P + 18P/N)",
            bytes_per_param=mixed.grads + fp32_grad + mixed.master + mixed.optimizer,
            explanation="A different 18: 2 B fp16 grads + 4 B fp32 grads + 4 B fp32 master "
            "+ 8 B Adam, all divided by N; the 2 B fp16 weights stay whole, so one GPU "
            "(N = 1) needs 20 B.",
            source="DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py, "
            "estimate_zero2_model_states_mem_needs (since PR #5099)",
        ),
        Convention(
            label="20 B: mixed precision with fp32 gradient accumulation",
            bytes_per_param=mixed.total + fp32_grad,
            explanation="The 16 B of mixed-precision Adam plus a 4 B fp32 copy of the "
            "gradients for accumulation ('+4Ψ'). Megatron's fp16-params/fp16-grads row is "
            "also 20 (4 + 16/d with the distributed optimizer).",
            source="Ultra-Scale Playbook, 'Memory usage in Transformers' "
            "(mixed precision: 16 B, +4Ψ with fp32 grad accumulation); " + MEGATRON_SOURCE,
        ),
    ]


# GPU spec sheets and the ZeRO paper count in GB (10**9 B); nvidia-smi and PyTorch's
# memory reports count in MiB/GiB (2**20, 2**30 B). A GiB is 7.37 % larger than a GB.
GIB_OVER_GB = GIB / GB - 1

GB_VS_GIB_NOTE = (
    f"GB = 10^9 bytes (spec sheets, the ZeRO paper); GiB = 2^30 = {GIB:,} bytes "
    f"(nvidia-smi's MiB, torch.cuda.memory_allocated). 1 GiB is {GIB_OVER_GB:.1%} more than "
    "1 GB, so '80 GB' on a spec sheet is 74.5 GiB and an 80 GiB figure is 85.9 GB."
)


# What FP8 training changes beyond the weights' bytes: the activations its GEMMs save for the
# backward pass, and the GEMMs' peak.
FP8_SAVED_INPUT_SOURCE = (
    "Transformer Engine keeps a linear layer's input for the weight-gradient GEMM as the FP8 "
    "column-wise copy and drops the row-wise one (transformer_engine/pytorch/module/linear.py:"
    "600-621, NVIDIA/TransformerEngine@d0067d0d); the four GEMM inputs per layer (QKV, "
    "attention projection, MLP up and down) as Korthikanti et al., arXiv:2205.05198, Section 4.1"
)


def gemm_input_activation_bytes(
    tokens: float, hidden: int, ffn_hidden: int, bytes_per_value: float
) -> float:
    """Bytes of the four GEMM inputs one transformer layer saves for backward: the QKV input,
    the attention output before its projection and the MLP input (h values per token each)
    and the MLP's down-projection input (ffn_hidden values): tokens * (3h + f) * bytes.

    bf16 keeps 2 bytes per value, FP8 1 (plus a scale per tensor or block, left out); the
    rest of a layer's saved activations (norm inputs, softmax, dropout masks, the attention
    scores) stay in higher precision whatever the GEMMs run in."""
    if tokens < 0 or hidden < 1 or ffn_hidden < 1 or bytes_per_value <= 0:
        raise ValueError("tokens must be >= 0, hidden and ffn_hidden >= 1, bytes > 0")
    return tokens * (3 * hidden + ffn_hidden) * bytes_per_value


@dataclass(frozen=True)
class GemmPeaks:
    """Dense bf16 and FP8 Tensor Core peaks of one accelerator (app.calc.hardware)."""

    slug: str
    name: str
    bf16_flops: float
    fp8_flops: float
    source: str

    @property
    def fp8_over_bf16(self) -> float:
        """The most FP8 can speed up a GEMM-bound step: the ratio of the peaks."""
        return self.fp8_flops / self.bf16_flops


FP8_ACCELERATORS = ("h100-sxm", "h200", "b200")


def fp8_gemm_peaks(slugs: tuple[str, ...] = FP8_ACCELERATORS) -> list[GemmPeaks]:
    """The dense bf16 and FP8 peaks the datasheets give (app.calc.hardware's presets)."""
    return [
        GemmPeaks(
            slug,
            ACCELERATORS[slug].name,
            peak_flops(ACCELERATORS[slug], "bf16"),
            peak_flops(ACCELERATORS[slug], "fp8"),
            ACCELERATORS[slug].source,
        )
        for slug in slugs
    ]
