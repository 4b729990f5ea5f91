"""Activation memory per GPU: one transformer layer, and one pipeline stage.

Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", MLSys
2023 (arXiv:2205.05198), Section 4 and Table 2. For a GPT layer with 16-bit activations,
multi-head attention, a GeLU MLP of width 4h and dropout, Section 4.1 counts per layer

    attention  11sbh + 5as^2b   QKV input 2sbh; Q and K 4sbh; softmax output 2as^2b;
                                softmax dropout mask as^2b; dropout output 2as^2b; V 2sbh;
                                output-projection input 2sbh; attention dropout mask sbh
    MLP        19sbh            first-linear input 2sbh; GeLU input 8sbh; GeLU output 8sbh;
                                dropout mask sbh
    norms       4sbh            the inputs of the two LayerNorms

which is sbh(34 + 5as/h). Table 2 then gives, per GPU, TP: sbh(10 + 24/t + 5as/(ht));
TP+SP: sbh(34/t + 5as/(ht)); selective recompute: sbh(10 + 24/t), or sbh*34/t with SP; full
recompute: 2sbh (the layer input only).

This module keeps the paper's bookkeeping, tensor by tensor, and generalises it; in the
paper's setting it reduces exactly to the expressions above (tests/calc/test_activations.py):

- B = bytes_per_value for every saved tensor (2 in the paper); dropout masks are 1 byte.
- GQA: Q and the output-projection input are heads*head_dim wide, K and V kv_heads*head_dim.
  With fewer KV heads than TP ranks the KV heads are replicated, so a GPU holds
  max(kv_heads, t)/t of them.
- SwiGLU of inner width f: the MLP saves its input (B*sbh), the gate and up outputs (B*sbf
  each; the inputs of SiLU and of the product) and the product (B*sbf, the input of the down
  projection): B*sbh + 3B*sbf. This assumes a fused SwiGLU kernel (Megatron's
  bias_swiglu_impl saves only the fc1 output, gate and up together, and recomputes SiLU in
  backward). Eager PyTorch also saves SiLU(gate), one more B*sbf. A GeLU MLP saves the GeLU
  input and output, 2B*sbf, so f = 4h gives the paper's 2 + 8 + 8 (+1 mask) = 19sbh.
  Megatron's theoretical_memory_usage.py (compute_activation_memory) writes the layer as
  sbh(18 + 4f/h): 18 = 11 attention + 4 norms + 2 MLP input + 1 MLP mask, and 4f/h is two
  16-bit tensors of width f, the GeLU count. It uses that for SwiGLU too, and so leaves out
  one 2sbf tensor per layer (the fc1 output is 2f wide there).
- MoE (experts > 1, ffn_hidden = one expert's width, balanced routing, expert TP = TP): the
  routed experts each save their own copy of the permuted tokens (top_k copies of B*sbh) and
  every routed or shared expert saves its inner tensors, so the inner terms count
  top_k + shared_experts times. Router logits (s*b*experts values) are left out as small.
- dropout=False (modern LLMs): no masks and no dropout outputs. The softmax output is then
  the input of the product with V, stored once: B*as^2b.
- flash_attention: the s^2 terms are never stored; FlashAttention keeps the output (already
  counted as the output-projection input) and a log-sum-exp per query and head, 4 bytes *
  a*s*b: about 4/(30*head_dim) of the layer, 0.1-0.2% for head_dim 128-64, left out. Its
  dropout regenerates the mask from the RNG state. Selective recompute then saves nothing
  more, as Megatron's maintainers note (NVIDIA/Megatron-LM#464).
- distribute_saved: with full recompute the kept layer input is split over the TP ranks,
  2sbh/t (Megatron-LM's --distribute-saved-activations, which OPT-175B's metaseq launcher
  passes as --distribute-checkpointed-activations); each rank all-gathers it before the
  layer's recompute (an all-gather the planner does not time: b*s*h per layer, an eighth of
  the layer's TP traffic).
- Context parallelism cp: each GPU holds s/cp tokens. Without flash attention its s^2 terms
  are its queries against all keys, a*(s/cp)*s*b, so every term divides by cp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.calc.model import ModelConfig

Recompute = Literal["none", "selective", "full"]
Schedule = Literal["1f1b", "gpipe", "interleaved"]

RECOMPUTE_MODES: tuple[Recompute, ...] = ("none", "selective", "full")
SCHEDULES: tuple[Schedule, ...] = ("1f1b", "gpipe", "interleaved")

MASK_BYTES = 1  # a dropout mask keeps one byte per element (Korthikanti Section 4.1)
LOGITS_BYTES = 4  # cross-entropy keeps the logits in fp32 (Korthikanti Section 4.3)
TOKEN_ID_BYTES = 8  # int64 token ids, the embedding's input (Megatron's "8 * s * b * p")


@dataclass(frozen=True)
class ActivationSetup:
    """How one micro-batch runs: its shape, the parallelism that splits it, what is saved."""

    seq_len: int  # s, the whole sequence (context parallelism splits it)
    micro_batch: int  # b
    tp: int = 1  # t
    sp: bool = False  # sequence parallelism in the TP group (Korthikanti Section 4.2.2)
    cp: int = 1  # context parallelism: each GPU holds s/cp tokens
    recompute: Recompute = "none"
    flash_attention: bool = False
    dropout: bool = True
    bytes_per_value: int = 2  # B: 2 for bf16/fp16
    # Full recompute keeps each layer's input split over the TP group rather than whole on
    # every rank (Megatron-LM --distribute-saved-activations, metaseq
    # --distribute-checkpointed-activations): 2sbh/t, as with sequence parallelism
    distribute_saved: bool = False


@dataclass(frozen=True)
class LayerActivations:
    """Bytes one GPU keeps for one layer and one micro-batch until its backward pass."""

    attention: float  # the linear (s*b*h-like) terms of attention, its dropout mask included
    attention_scores: float  # the s^2 terms (0 with flash attention or selective recompute)
    mlp: float
    norms: float  # the norm inputs; with full recompute, the layer input (the 1st norm's)

    @property
    def total(self) -> float:
        return self.attention + self.attention_scores + self.mlp + self.norms


@dataclass(frozen=True)
class StageActivations:
    """Bytes of activations one GPU of a pipeline stage holds at its peak."""

    layers: float  # layer activations * layers in stage * in-flight micro-batches
    embedding: float  # first stage: token ids and the embedding dropout mask
    output: float  # last stage: final norm input, output-projection input, fp32 logits

    @property
    def total(self) -> float:
        return self.layers + self.embedding + self.output


def _check_setup(cfg: ModelConfig, setup: ActivationSetup) -> None:
    for name in ("seq_len", "micro_batch", "tp", "cp", "bytes_per_value"):
        if getattr(setup, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(setup, name)}")
    if setup.recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {RECOMPUTE_MODES}, got {setup.recompute!r}")
    if cfg.heads % setup.tp:
        raise ValueError(f"tp={setup.tp} must divide the {cfg.heads} attention heads")


def layer_activations(cfg: ModelConfig, setup: ActivationSetup) -> LayerActivations:
    """Bytes one GPU saves for one transformer layer and one micro-batch.

    Korthikanti et al. (arXiv:2205.05198) Section 4.1 and Table 2, generalised as the
    module docstring explains. With TP alone, the tensors outside the TP region (norm
    inputs, the inputs of the QKV and first MLP linears, the two dropout masks) are whole on
    every GPU; sequence parallelism (Section 4.2.2) splits them over t too.
    """
    _check_setup(cfg, setup)
    value = setup.bytes_per_value
    t = setup.tp
    tokens = setup.seq_len / setup.cp * setup.micro_batch  # s*b on this GPU
    # Outside the TP region a tensor is replicated, unless SP splits it along s.
    outside = tokens * cfg.hidden / (t if setup.sp else 1)

    if setup.recompute == "full":
        # Korthikanti Table 2: only the layer input, 2sbh (2sbh/t with SP), is kept.
        kept = tokens * cfg.hidden / t if setup.distribute_saved else outside
        return LayerActivations(attention=0.0, attention_scores=0.0, mlp=0.0, norms=value * kept)

    masks = MASK_BYTES if setup.dropout else 0
    d = cfg.dim_per_head
    q_width = cfg.heads * d / t
    kv_width = max(cfg.kv_heads, t) * d / t  # KV heads are replicated when kv_heads < t
    attention = (
        value * outside  # input of the QKV projection
        + value * tokens * (q_width + 2 * kv_width)  # Q, K (for QK^T) and V
        + value * tokens * q_width  # input of the output projection
        + masks * outside  # dropout after the output projection
    )

    if setup.flash_attention or setup.recompute == "selective":
        scores = 0.0
    else:
        score_elements = cfg.heads / t * tokens * setup.seq_len  # a*(s/cp)*s*b per GPU
        # softmax output; with dropout also its mask and the dropout output (Section 4.1)
        scores = score_elements * (value + (masks + value if setup.dropout else 0))

    moe = cfg.experts > 1
    inner_tensors = 3 if cfg.ffn_type == "swiglu" else 2  # gate, up, product | GeLU in, out
    inner = inner_tensors * value * tokens * cfg.ffn_hidden / t
    expert_inputs = cfg.top_k * value * outside if moe else 0.0  # permuted token copies
    active_experts = cfg.top_k + cfg.shared_experts if moe else 1
    mlp = value * outside + expert_inputs + active_experts * inner + masks * outside

    norms = 2 * value * outside
    return LayerActivations(attention=attention, attention_scores=scores, mlp=mlp, norms=norms)


def in_flight_microbatches(
    schedule: Schedule,
    pp: int,
    microbatches: int,
    virtual_stages: int = 1,
    stage: int = 0,
) -> float:
    """Micro-batches of activations a pipeline stage holds at its peak.

    In units of one micro-batch through all of the stage's layers. The first stage
    (stage=0) holds the most; that is the default. With p = 1 there is no pipeline and
    gradient accumulation runs one micro-batch at a time: 1.

    - GPipe (Huang et al., arXiv:1811.06965): every forward before any backward, m.
    - 1F1B (Narayanan et al., arXiv:2104.04473, Section 2.2.1): stage i runs p - i - 1
      warm-up forwards, then one forward before each backward, so it peaks at min(p - i, m);
      the first stage holds p micro-batches (Korthikanti Section 4.2.3).
    - Interleaved with v model chunks per GPU (Narayanan Section 2.2.2, Megatron's
      schedules.py): stage i runs 2(p - i - 1) + (v - 1)p warm-up chunk-forwards, at most
      m*v, then one more before the first backward. Each chunk is 1/v of the stage, so the
      first stage peaks at (vp + p - 1)/v = p(1 + (p - 1)/(pv)): Korthikanti Section 4.2.3's
      interleaving factor, also Megatron's theoretical_memory_usage.py penalty. v must be at
      least 2; virtual_stages is ignored by the other schedules.
    """
    if pp < 1 or microbatches < 1:
        raise ValueError("pp and microbatches must be at least 1")
    if not 0 <= stage < pp:
        raise ValueError(f"stage must be in 0..{pp - 1}, got {stage}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if pp == 1:
        return 1.0
    if schedule == "gpipe":
        return float(microbatches)
    if schedule == "1f1b":
        return float(min(pp - stage, microbatches))
    v = virtual_stages
    if v < 2:
        raise ValueError("the interleaved schedule needs virtual_stages >= 2; use '1f1b'")
    warmup = 2 * (pp - stage - 1) + (v - 1) * pp
    return min(warmup + 1, microbatches * v) / v


def stage_activations(
    cfg: ModelConfig,
    setup: ActivationSetup,
    layers_in_stage: int,
    in_flight: float,
    first_stage: bool,
    last_stage: bool,
) -> StageActivations:
    """Bytes of activations one GPU of a pipeline stage holds at its peak.

    `in_flight` is this stage's peak count from `in_flight_microbatches`; every term below
    is per micro-batch and is multiplied by it. Korthikanti et al. (arXiv:2205.05198)
    Section 4.3:

    - first stage: the embedding dropout mask, sbh bytes (split over t with SP), the
      paper's sbhp/t; plus the int64 token ids, 8sb, which Megatron's
      theoretical_memory_usage.py counts and the paper does not.
    - last stage: the final norm's input 2sbh/t, the output projection's input 2sbh/t and
      the logits that cross-entropy keeps in fp32, 4sbv/t (vocab-parallel over t): the
      paper's 4sbh/t(1 + v/h). Without SP the two sbh tensors are whole on every TP rank.

    Not counted: with full recompute, the one layer rebuilt during its backward pass (a
    transient of one `recompute="none"` layer), and allocator fragmentation.
    """
    _check_setup(cfg, setup)
    if layers_in_stage < 0 or in_flight < 0:
        raise ValueError("layers_in_stage and in_flight must not be negative")
    value = setup.bytes_per_value
    t = setup.tp
    tokens = setup.seq_len / setup.cp * setup.micro_batch
    outside = tokens * cfg.hidden / (t if setup.sp else 1)

    layers = layer_activations(cfg, setup).total * layers_in_stage * in_flight
    embedding = 0.0
    if first_stage:
        mask = MASK_BYTES * outside if setup.dropout else 0.0
        embedding = (mask + TOKEN_ID_BYTES * tokens) * in_flight
    output = 0.0
    if last_stage:
        logits = LOGITS_BYTES * tokens * cfg.vocab / t
        output = (2 * value * outside + logits) * in_flight
    return StageActivations(layers=layers, embedding=embedding, output=output)


STATS_BYTES = 4  # LayerNorm's mean and 1/sigma, attention's log-sum-exp: fp32 in torch
LOSS_VALUES = 2  # the loss, and the weight total nll_loss keeps for its backward (fp32)


def torch_forward_extra_bytes(
    cfg: ModelConfig, setup: ActivationSetup, targets_copied: bool
) -> int:
    """What torch keeps at the end of a whole model's forward (one stage, no TP, CP or
    recompute) that `stage_activations`' per-layer count leaves out, measured to the byte by
    the ZeRO demo (demos/live_bytes.py):

    - each LayerNorm's mean and 1/sigma per token, fp32: 2 per block and the final one;
    - attention's log-sum-exp per head and token, fp32, when no score matrix is kept;
    - the position ids the learned position embedding keeps, int64;
    - the loss and nll_loss's weight total, one fp32 value each;
    - cross-entropy's copy of the targets, int64 per token, when they are copied (flattening
      the shifted slice tokens[:, 1:] copies it unless the batch is one sequence).
    """
    _check_setup(cfg, setup)
    tokens = setup.seq_len * setup.micro_batch
    norms = 2 * cfg.layers + 1
    log_sum_exp = cfg.layers * cfg.heads * tokens if setup.flash_attention else 0
    positions = setup.seq_len if cfg.learned_positions else 0
    targets = tokens if targets_copied else 0
    fp32_values = 2 * norms * tokens + log_sum_exp + LOSS_VALUES
    return STATS_BYTES * fp32_values + TOKEN_ID_BYTES * (positions + targets)


def mlp_stack_saved_bytes(
    layers: int,
    tokens: int,
    width: int,
    hidden_width: int,
    bytes_per_value: int,
    segment_layers: int | None = None,
) -> int:
    """Bytes autograd keeps for backward after the forward pass of a stack of residual MLPs.

    Each block is x + Linear(width -> hidden) -> GeLU -> Linear(hidden -> width), applied to
    `tokens` rows. Without recompute a block saves the first linear's input (tokens * width
    values), the GeLU input and the GeLU output, which is the second linear's input (tokens
    * hidden each); the weights are parameters and the residual add saves nothing. That is
    Korthikanti et al. (arXiv:2205.05198) Section 4.1's MLP count without the dropout mask:
    with hidden = 4 * width and 2-byte values, 2sbh + 8sbh + 8sbh.

    With checkpointing in segments of `segment_layers` blocks (Chen et al., arXiv:1604.06174,
    Section 4), only each segment's input is kept: ceil(layers / segment_layers) tensors of
    tokens * width values. segment_layers=1 is full per-layer recompute (Korthikanti Table 2:
    the layer input only).
    """
    for name, value in (
        ("layers", layers),
        ("tokens", tokens),
        ("width", width),
        ("hidden_width", hidden_width),
        ("bytes_per_value", bytes_per_value),
    ):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if segment_layers is None:
        return layers * tokens * (width + 2 * hidden_width) * bytes_per_value
    if not 1 <= segment_layers <= layers:
        raise ValueError(f"segment_layers must be from 1 to {layers}, got {segment_layers}")
    segments = -(-layers // segment_layers)
    return segments * tokens * width * bytes_per_value
