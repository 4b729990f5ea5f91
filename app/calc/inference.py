"""Inference memory per GPU: weights, KV cache and runtime overhead under tensor parallelism.

Per GPU, with Psi parameters, t-way tensor parallelism, L layers, k KV heads of dimension d,
s tokens of context per sequence, b sequences and B_w, B_kv bytes per element:

    weights   Psi * B_w / t                       (every matrix split t ways, Megatron-style)
    KV cache  2 * L * k_gpu * d * s * b * B_kv    (K and V, every layer, every token)
    k_gpu     k / t, or 1 when k < t              (KV heads replicated, as vLLM does)

The KV cache size is HTSYM's "2 * bytes * H * K * L * T" per sequence (How To Scale Your Model,
"All About Transformer Inference", section "What's a KV cache?") and the PagedAttention paper's
"2 (key and value vectors) x 5120 (hidden state size) x 40 (number of layers) x 2 (bytes per
FP16)" = 800 KB per token for OPT-13B (Kwon et al. 2023, arXiv:2309.06180, Section 3). KV heads
per GPU are vLLM's `ModelConfig.get_num_kv_heads`: max(1, k // t), "We will replicate the KV
heads in the case where the number of KV heads is smaller than the tensor parallel size so
each GPU has at least one KV head" (vllm/config.py).

What fits is judged against a fraction u of the GPU's memory, as vLLM's
`--gpu-memory-utilization` (default 0.9: "The fraction of GPU memory to be used for the model
executor", docs.vllm.ai, Engine Arguments) reserves it. The runtime overhead (CUDA context,
one forward pass's activations, communicator buffers) is one editable constant: the anchors
put the CUDA context alone at 1-2 GB (Ultra-Scale Playbook; research/anchors.md section 3.7).

Multi-head latent attention (MLA: DeepSeek-AI, DeepSeek-V2, arXiv:2405.04434, Section 2.1 and
Table 1) caches one compressed latent of d_c = kv_lora_rank elements and one decoupled RoPE key
of d_h^R = qk_rope_head_dim elements per token and layer, shared by every head:

    KV cache  (d_c + d_h^R) * L * s * b * B_kv    (no factor 2: K and V come from the same latent)

and, having no head axis to split, the whole latent cache sits on every tensor-parallel rank:
vLLM's `MLAAttention.get_kv_cache_spec` returns `MLAAttentionSpec(num_kv_heads=1, head_size=
kv_lora_rank + qk_rope_head_dim)` whatever t is (vllm/model_executor/layers/attention/
mla_attention.py at 90b0a26e), and SGLang's `MLATokenToKVPool` allocates (tokens, 1,
kv_lora_rank + qk_rope_head_dim) per layer (python/sglang/srt/mem_cache/memory_pool.py at
000ccdba). Only attention run data-parallel (SGLang --enable-dp-attention, vLLM's DP attention)
stops that copy.

A nominal parameter count ("70B") may stand in for the exact count of the shape, and a KV size
per token for the one the shape gives: then the weights and what is left for the cache need no
full model config.

Weights in int4 count 0.5 bytes per parameter and nothing else: real int4 formats (GPTQ, AWQ)
add a 16-bit scale (and often a zero point) per group of 128 weights, 1/64 to 1/32 of a byte
per weight more (+3 to 6 %), and usually keep the embeddings in 16 bits. Not counted here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from app.calc.messages import N_, Message
from app.calc.model import ModelConfig, count_params
from app.calc.units import GB

WeightDtype = Literal["bf16", "fp16", "fp8", "int8", "int4"]
# "gqa": k KV heads of dimension d (MHA: k = a; MQA: k = 1); "mla": one latent per token and layer.
AttentionKind = Literal["gqa", "mla"]
KvDtype = Literal["bf16", "fp16", "fp8", "fp32"]

WEIGHT_BYTES: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
KV_BYTES: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}

KV_SOURCE = (
    "K and V for every layer and token: How To Scale Your Model, inference chapter "
    "(2 · bytes · H · K · L · T); Kwon et al. 2023, arXiv:2309.06180, Section 3"
)
KV_HEADS_SOURCE = (
    "vLLM ModelConfig.get_num_kv_heads: max(1, k // t); KV heads replicated when k < t"
)
WEIGHTS_SOURCE = (
    "Exact parameter count (app.calc.model) × bytes per weight ÷ t; int4 without group scales"
)
OVERHEAD_SOURCE = (
    "CUDA context, activations of one forward pass, NCCL buffers: 1–2 GB CUDA context in the "
    "Ultra-Scale Playbook (anchors §3.7); editable"
)
MLA_SOURCE = (
    "MLA caches (d_c + d_h^R) elements per token and layer: DeepSeek-V2, arXiv:2405.04434, "
    "Table 1; one latent on every TP rank: vLLM MLAAttentionSpec(num_kv_heads=1), SGLang "
    "MLATokenToKVPool"
)
NOMINAL_WEIGHTS_SOURCE = "Nominal parameter count × bytes per weight ÷ t; int4 without group scales"
GIVEN_KV_SOURCE = "KV bytes per token as given, split over t as the model's KV heads are"
UTILISATION_SOURCE = (
    "vLLM --gpu-memory-utilization, default 0.9: the fraction of GPU memory vLLM may use "
    "(docs.vllm.ai, Engine Arguments)"
)


@dataclass(frozen=True)
class InferenceSetup:
    model: ModelConfig
    weight_dtype: WeightDtype = "bf16"
    kv_dtype: KvDtype = "bf16"
    tp: int = 1
    context: int = 4096  # tokens per sequence held in the cache (prompt + generated)
    batch: int = 1  # sequences decoded together
    overhead_bytes: float = 1e9
    gpu_memory_bytes: float = 80e9
    utilisation: float = 0.9
    attention: AttentionKind = "gqa"
    kv_lora_rank: int = 512  # d_c, MLA only (DeepSeek-V2 and V3: 512)
    qk_rope_head_dim: int = 64  # d_h^R, MLA only (DeepSeek-V2 and V3: 64)
    params: float | None = None  # a nominal parameter count; None: the exact count of `model`
    kv_bytes_per_token: float | None = None  # the model's KV bytes per token; None: its shape's


@dataclass(frozen=True)
class Term:
    key: str
    label: str
    bytes_: float  # per GPU
    formula: str  # LaTeX, symbolic
    substituted: str  # LaTeX, this setup's numbers
    source: str


@dataclass(frozen=True)
class InferenceMemory:
    setup: InferenceSetup
    total_params: int
    kv_heads_per_gpu: int
    kv_bytes_per_token_model: float  # all KV heads of the model, one token
    kv_bytes_per_token_gpu: float  # what one GPU holds per token
    budget_bytes: float  # utilisation x GPU memory
    largest_batch: int  # at the given context; 0 when not even one sequence fits
    largest_context: int  # at the given batch; 0 when not even one token fits
    free_for_kv_bytes: float = 0.0  # budget - weights - overhead (negative: the weights overflow)
    tokens_that_fit: int = 0  # cache slots one GPU has room for, all sequences together
    kv_replicated: bool = False  # some GPU holds a KV head (or MLA latent) another also holds
    terms: list[Term] = field(default_factory=list)

    @property
    def total_bytes(self) -> float:
        return sum(t.bytes_ for t in self.terms)

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.budget_bytes

    @property
    def headroom_bytes(self) -> float:
        return self.budget_bytes - self.total_bytes

    def term(self, key: str) -> Term:
        for t in self.terms:
            if t.key == key:
                return t
        raise KeyError(key)


def kv_heads_per_gpu(kv_heads: int, tp: int) -> int:
    """KV heads one GPU holds: k / t, or one replicated head when k < t (vLLM)."""
    return max(1, kv_heads // tp)


def kv_bytes_per_token(
    layers: int, kv_heads: int, head_dim: int, bytes_per_element: float
) -> float:
    """2 · L · k · d · B: one token's K and V in every layer (HTSYM; arXiv:2309.06180 §3)."""
    return 2 * layers * kv_heads * head_dim * bytes_per_element


def mla_kv_elements_per_token(layers: int, kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """(d_c + d_h^R) · L: one token's cached latent and RoPE key over every layer (DeepSeek-V2,
    arXiv:2405.04434, Table 1: "(d_c + d_h^R) l", about 9/2 d_h l for d_c = 4 d_h)."""
    return (kv_lora_rank + qk_rope_head_dim) * layers


def check_tensor_parallel(model: ModelConfig, tp: int, attention: AttentionKind = "gqa") -> None:
    """Raise ValueError unless t splits the heads the way vLLM's QKVParallelLinear can. An MLA
    layer splits its query heads only: its one latent is not split."""
    if tp < 1:
        raise ValueError(f"tensor parallel must be at least 1, got {tp}")
    if model.heads % tp:
        template = N_("tensor parallel (%(tp)s) must divide the %(heads)s attention heads")
        raise ValueError(Message(template, tp=tp, heads=model.heads))
    if attention == "mla":
        return
    if model.kv_heads % tp and tp % model.kv_heads:
        template = N_(
            "tensor parallel (%(tp)s) must divide the %(kv_heads)s KV heads, or be a multiple "
            "of them (then each GPU holds one replicated KV head)"
        )
        raise ValueError(Message(template, tp=tp, kv_heads=model.kv_heads))


def _tex(x: float) -> str:
    """A number for LaTeX: integers below 10^5 as they are, the rest as m x 10^e."""
    if x == int(x) and abs(x) < 1e5:
        return str(int(x))
    exp = math.floor(math.log10(abs(x)))
    if -3 <= exp < 5:
        return f"{x:.4g}"
    return rf"{x / 10**exp:.4g}\times10^{{{exp}}}"


def _gb(x: float) -> str:
    return rf"{x / GB:.2f}\ \text{{GB}}"


def _kv_term(setup: InferenceSetup, k_gpu: int, per_token_gpu: float, kv: float) -> Term:
    """The KV cache's row: its formula and this setup's numbers, for the kind of attention."""
    cfg, t, b_kv = setup.model, setup.tp, KV_BYTES[setup.kv_dtype]
    s_b = rf"{_tex(setup.context)}\times{_tex(setup.batch)}"
    label = f"KV cache ({setup.kv_dtype})"
    if setup.kv_bytes_per_token is not None:
        share = r"" if setup.attention == "mla" else rf"\times\frac{{{k_gpu}}}{{{cfg.kv_heads}}}"
        return Term(
            key="kv_cache",
            label=label,
            bytes_=kv,
            formula=r"B_\text{token,GPU}\,s\,b",
            substituted=rf"{_tex(setup.kv_bytes_per_token)}{share}\times{s_b} = {_gb(kv)}",
            source=GIVEN_KV_SOURCE if setup.attention == "gqa" else MLA_SOURCE,
        )
    if setup.attention == "mla":
        return Term(
            key="kv_cache",
            label=label,
            bytes_=kv,
            formula=r"(d_c + d_h^R)\,L\,s\,b\,B_{kv}",
            substituted=(
                rf"({setup.kv_lora_rank}+{setup.qk_rope_head_dim})\times{cfg.layers}\times{s_b}"
                rf"\times{_tex(b_kv)} = {_gb(kv)}\quad\text{{(on each of the {t} GPUs)}}"
            ),
            source=MLA_SOURCE,
        )
    if cfg.kv_heads >= t:
        heads_tex = rf"\frac{{k}}{{t}} = \frac{{{cfg.kv_heads}}}{{{t}}}"
    else:
        heads_tex = rf"1\ (k = {cfg.kv_heads} < t = {t}\text{{: replicated}})"
    return Term(
        key="kv_cache",
        label=label,
        bytes_=kv,
        formula=r"2\,L\,k_\text{GPU}\,d\,s\,b\,B_{kv}",
        substituted=(
            rf"2\times{cfg.layers}\times{k_gpu}\times{cfg.dim_per_head}\times{s_b}"
            rf"\times{_tex(b_kv)} = {_gb(kv)},\quad k_\text{{GPU}} = {heads_tex}"
        ),
        source=f"{KV_SOURCE}; {KV_HEADS_SOURCE}",
    )


def inference_memory(setup: InferenceSetup) -> InferenceMemory:
    """Per-GPU memory of serving `setup.model` (module docstring), with what fits."""
    cfg = setup.model
    params = count_params(cfg)  # raises ValueError for shapes no transformer has
    check_tensor_parallel(cfg, setup.tp, setup.attention)
    if setup.context < 1 or setup.batch < 1:
        raise ValueError("context and batch must be at least 1")
    if setup.overhead_bytes < 0:
        raise ValueError("overhead cannot be negative")
    if not 0 < setup.utilisation <= 1:
        raise ValueError("utilisation must be in (0, 1]")
    if setup.gpu_memory_bytes <= 0:
        raise ValueError("GPU memory must be positive")
    if setup.params is not None and setup.params <= 0:
        raise ValueError("the parameter count must be positive")
    if setup.kv_bytes_per_token is not None and setup.kv_bytes_per_token <= 0:
        raise ValueError("the KV bytes per token must be positive")
    if setup.attention == "mla" and (setup.kv_lora_rank < 1 or setup.qk_rope_head_dim < 0):
        raise ValueError("kv_lora_rank must be at least 1 and qk_rope_head_dim at least 0")

    t, d = setup.tp, cfg.dim_per_head
    b_w, b_kv = WEIGHT_BYTES[setup.weight_dtype], KV_BYTES[setup.kv_dtype]
    if setup.attention == "mla":
        # One latent, not split: every rank holds all of it (vLLM, SGLang; module docstring).
        k_gpu, replicated = 1, t > 1
        per_token_model = (
            mla_kv_elements_per_token(cfg.layers, setup.kv_lora_rank, setup.qk_rope_head_dim) * b_kv
        )
        if setup.kv_bytes_per_token is not None:
            per_token_model = setup.kv_bytes_per_token
        per_token_gpu = per_token_model
    else:
        k_gpu, replicated = kv_heads_per_gpu(cfg.kv_heads, t), cfg.kv_heads < t
        per_token_model = kv_bytes_per_token(cfg.layers, cfg.kv_heads, d, b_kv)
        if setup.kv_bytes_per_token is not None:
            per_token_model = setup.kv_bytes_per_token
        per_token_gpu = per_token_model * k_gpu / cfg.kv_heads

    total_params = params.total if setup.params is None else setup.params
    weights = total_params * b_w / t
    kv = per_token_gpu * setup.context * setup.batch
    budget = setup.utilisation * setup.gpu_memory_bytes
    free_for_kv = budget - weights - setup.overhead_bytes
    largest_batch = max(0, math.floor(free_for_kv / (per_token_gpu * setup.context)))
    largest_context = max(0, math.floor(free_for_kv / (per_token_gpu * setup.batch)))
    tokens_that_fit = max(0, math.floor(free_for_kv / per_token_gpu))

    weights_symbol = r"\Psi" if setup.params is None else r"\Psi_\text{nominal}"
    terms = [
        Term(
            key="weights",
            label=f"Weights ({setup.weight_dtype})",
            bytes_=weights,
            formula=rf"\frac{{{weights_symbol}\,B_w}}{{t}}",
            substituted=rf"\frac{{{_tex(total_params)}\times{_tex(b_w)}}}{{{t}}} = {_gb(weights)}",
            source=WEIGHTS_SOURCE if setup.params is None else NOMINAL_WEIGHTS_SOURCE,
        ),
        _kv_term(setup, k_gpu, per_token_gpu, kv),
        Term(
            key="overhead",
            label="Runtime overhead",
            bytes_=setup.overhead_bytes,
            formula=r"O",
            substituted=_gb(setup.overhead_bytes),
            source=OVERHEAD_SOURCE,
        ),
    ]
    return InferenceMemory(
        setup=setup,
        total_params=round(total_params),
        kv_heads_per_gpu=k_gpu,
        kv_bytes_per_token_model=per_token_model,
        kv_bytes_per_token_gpu=per_token_gpu,
        budget_bytes=budget,
        largest_batch=largest_batch,
        largest_context=largest_context,
        free_for_kv_bytes=free_for_kv,
        tokens_that_fit=tokens_that_fit,
        kv_replicated=replicated,
        terms=terms,
    )


def memory_vs_batch(setup: InferenceSetup, batches: list[int]) -> list[tuple[int, float]]:
    """(batch, per-GPU bytes) for each batch: weights and overhead fixed, KV growing linearly."""
    report = inference_memory(setup)
    fixed = report.total_bytes - report.term("kv_cache").bytes_
    per_sequence = report.kv_bytes_per_token_gpu * setup.context
    return [(b, fixed + per_sequence * b) for b in batches]
