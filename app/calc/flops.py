"""Training and inference compute: FLOPs per token, total FLOPs, time, GPU-hours, cost, MFU.

Per token (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", arXiv:2001.08361,
Section 2.1 and Table 1): a forward pass costs 2N FLOPs for the N non-embedding parameters
(each weight is one multiply and one add per token), plus attention over the context. The
backward pass costs twice the forward, so training costs 3 x forward = 6N (+ attention);
full activation recomputation runs the forward once more, 4 x = 8N; inference is the forward
alone, 2N.

One count of attention for every number ShardLab shows (ATTENTION_CONVENTION). Attention's
two products over the context, the scores Q K^T and their weighted sum of V, cost
2 n_ctx d_attn FLOPs per token each in the forward pass: 4 n_layer n_ctx d_attn in all. That
is the count of Narayanan et al. 2021 (arXiv:2104.04473, Appendix: 4 B s^2 h per layer), of
PaLM's MFU (Chowdhery et al. 2022, arXiv:2204.02311, Appendix B: 6N + 12 L H Q T per trained
token) and of TorchTitan's MFU (torchtitan/models/utils.py, get_dense_model_nparams_and_flops,
"we follow the convention and do not account for sparsity in causal attention"; read at
main@b5bcd76c, 2026-08-21), and the planner's per-layer count uses it too. The other count is
the causal one, half as much: a causal mask leaves only the lower triangle of the score matrix
to compute. Kaplan's Table 1 writes 2 n_layer n_ctx d_attn (the paper does not say why it is
half), and Megatron-Core's num_floating_point_operations has counted the causal half since it
was rewritten ("/ 2  # causal mask", megatron/training/training.py, read at main@d98e8a64,
2026-08-22), though Narayanan et al.'s equation (3), which Megatron's MFU once reported,
counts the full square. The calculators show the causal figure as a conversion
(attention_flops_per_token(..., causal=True)), never as a second convention.

Model FLOPs vs hardware FLOPs: MFU counts only what the model needs (6N per trained token,
whatever the implementation recomputes); HFU counts what the hardware executes (8N with full
recomputation). Both are defined in Chowdhery et al. 2022 (PaLM, arXiv:2204.02311), Section 4.1
and Appendix B, which reports 46.2% MFU and 57.8% HFU for PaLM 540B.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["training", "training_recompute", "inference", "training_selective"]

ATTENTION_CONVENTION = "full"  # the whole score matrix; the causal half is a conversion
# Forward passes' worth of FLOPs per token: backward = 2 forwards; recompute = 1 more forward.
# Selective recompute runs the training's 3 passes and one more forward of attention's core
# (attention_flops_per_token), not of the weights: flops_per_token adds it.
PASSES: dict[str, int] = {
    "training": 3, "training_recompute": 4, "inference": 1, "training_selective": 3,
}  # fmt: skip
MODE_LABELS: dict[str, str] = {
    "training": "Training (6N: forward + backward)",
    "training_recompute": "Training, full recompute (8N: + one forward)",
    "inference": "Inference (2N: forward only)",
    "training_selective": "Training, selective recompute (6N + attention's core once more)",
}
SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600


def attention_flops_per_token(n_layer: int, n_ctx: int, d_attn: int, causal: bool = False) -> float:
    """Forward FLOPs per token of attention's products over the context, Q K^T and the
    weighted sum of V: 4 n_layer n_ctx d_attn, ShardLab's count (module docstring); with
    causal=True the causal half, 2 n_layer n_ctx d_attn, Kaplan's Table 1 term and
    Megatron-Core's count today."""
    if min(n_layer, n_ctx, d_attn) < 0:
        raise ValueError("layers, context and attention width cannot be negative")
    full = 4 * n_layer * n_ctx * d_attn
    return full / 2 if causal else full


def forward_flops_per_token(
    params: float, n_layer: int = 0, n_ctx: int = 0, d_attn: int = 0
) -> float:
    """C_forward = 2N + 4 n_layer n_ctx d_attn (Kaplan et al. 2020, Table 1's 2N, and the
    attention count of attention_flops_per_token).

    Leave n_layer (or n_ctx, d_attn) at 0 to drop the attention term, as C ≈ 6N does.
    """
    if params <= 0:
        raise ValueError(f"the parameter count must be positive, got {params:g}")
    return 2 * params + attention_flops_per_token(n_layer, n_ctx, d_attn)


def flops_per_token(
    params: float, mode: str, n_layer: int = 0, n_ctx: int = 0, d_attn: int = 0
) -> float:
    """FLOPs per token: 6N training, 8N with full recompute, 2N inference (+ attention term);
    selective recompute is training plus one more forward of attention's core."""
    if mode not in PASSES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(PASSES)}")
    flops = PASSES[mode] * forward_flops_per_token(params, n_layer, n_ctx, d_attn)
    if mode == "training_selective":
        flops += attention_flops_per_token(n_layer, n_ctx, d_attn)
    return flops


def megatron_flops_per_iteration(
    batch: int, seq: int, layers: int, hidden: int, vocab: int, recompute: bool = True
) -> float:
    """FLOPs of one training iteration of a GPT model, counting its GEMMs.

    Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", arXiv:2104.04473, Section 5.1, equation (3), with activation recomputation:

        F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))

    Its Appendix counts, per layer and forward pass, 24 B s h^2 (QKV, projection, 4h MLP) +
    4 B s^2 h (scores, weighted values), and 2 B s h V for the logit layer. Backward doubles
    each; recomputation adds one forward of the transformer layers but not of the logit layer:
    4 (24 B s h^2 + 4 B s^2 h) l + 3 (2 B s h V) = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
    Without recomputation the layers run 3 passes, not 4, which gives (our derivation, same
    counts): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
    """
    for name, value in (("batch", batch), ("seq", seq), ("layers", layers),
                        ("hidden", hidden), ("vocab", vocab)):  # fmt: skip
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    b, s, l, h, v = float(batch), float(seq), float(layers), float(hidden), float(vocab)  # noqa: E741
    if recompute:
        return 96 * b * s * l * h**2 * (1 + s / (6 * h) + v / (16 * l * h))
    return 72 * b * s * l * h**2 * (1 + s / (6 * h) + v / (12 * l * h))


def korthikanti_selective_flops_per_iteration(
    batch: int, seq: int, layers: int, hidden: int, vocab: int
) -> float:
    """Korthikanti et al. 2022 (arXiv:2205.05198), Appendix A, equation (8): the hardware FLOPs
    of one iteration with selective recomputation, 72 B s l h^2 (1 + s/(3h) + V/(12 l h)).

    The paper's own words count the recomputed attention core at 4 B s^2 h per layer, one
    forward of Q K^T and the weighted sum of V; equation (8) doubles the s/(6h) term of the
    model FLOPs instead, 12 B s^2 h per layer, three forwards' worth. ShardLab counts the one
    forward (flops_per_token with "training_selective"; the planner's training_flops_per_token)
    and shows this figure beside it: it is where the paper's "2.7% more FLOPs for GPT-3"
    (Section 5) comes from, s/(6h) = 2048 / 73,728.
    """
    for name, value in (("batch", batch), ("seq", seq), ("layers", layers),
                        ("hidden", hidden), ("vocab", vocab)):  # fmt: skip
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    b, s, l, h, v = float(batch), float(seq), float(layers), float(hidden), float(vocab)  # noqa: E741
    return 72 * b * s * l * h**2 * (1 + s / (3 * h) + v / (12 * l * h))


def training_time_s(total_flops: float, gpus: int, peak_flops: float, utilization: float) -> float:
    """Seconds to execute `total_flops` on `gpus` accelerators running at `utilization` of peak.

    Narayanan et al. 2021, Section 5.1: time = F * I / (n X) with X the achieved FLOP/s per GPU;
    here X = utilization x peak.
    """
    if gpus < 1:
        raise ValueError(f"the number of GPUs must be at least 1, got {gpus}")
    if not 0 < utilization <= 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization:g}")
    if peak_flops <= 0 or total_flops < 0:
        raise ValueError("peak FLOP/s must be positive and total FLOPs not negative")
    return total_flops / (gpus * peak_flops * utilization)


def utilization_from_throughput(
    tokens_per_s: float, flops_per_token_: float, gpus: int, peak_flops: float
) -> float:
    """MFU (or HFU) from a measured throughput: tokens/s x FLOPs per token / (GPUs x peak).

    With model FLOPs per token (6N) this is PaLM's MFU (arXiv:2204.02311, Appendix B); with
    the FLOPs the hardware executes (8N under full recompute) it is HFU.
    """
    if tokens_per_s <= 0 or flops_per_token_ <= 0 or peak_flops <= 0 or gpus < 1:
        raise ValueError("throughput, FLOPs per token, peak and GPUs must all be positive")
    return tokens_per_s * flops_per_token_ / (gpus * peak_flops)


@dataclass(frozen=True)
class ComputeEstimate:
    """Everything the compute calculator derives, in raw units."""

    params: float  # N
    tokens: float  # D
    mode: str
    forward_flops_per_token: float
    hardware_flops_per_token: float  # what the GPUs execute (8N with recompute)
    model_flops_per_token: float  # what the model needs (6N training, 2N inference)
    hardware_flops: float  # total executed
    model_flops: float
    gpus: int
    peak_flops: float  # per GPU, dense
    utilization: float  # HFU: executed FLOPs / (GPUs x peak x time)
    mfu: float  # model FLOPs / (GPUs x peak x time)
    time_s: float
    gpu_hours: float
    cost: float
    tokens_per_s: float


def estimate(
    params: float,
    tokens: float,
    mode: str,
    gpus: int,
    peak_flops: float,
    utilization: float,
    price_per_gpu_hour: float = 0.0,
    n_layer: int = 0,
    n_ctx: int = 0,
    d_attn: int = 0,
) -> ComputeEstimate:
    """Total FLOPs for D tokens, then time = executed FLOPs / (GPUs x peak x utilization)."""
    if tokens <= 0:
        raise ValueError(f"the number of tokens must be positive, got {tokens:g}")
    if price_per_gpu_hour < 0:
        raise ValueError("the price per GPU-hour cannot be negative")
    forward = forward_flops_per_token(params, n_layer, n_ctx, d_attn)
    hardware = flops_per_token(params, mode, n_layer, n_ctx, d_attn)
    model = forward * (1 if mode == "inference" else PASSES["training"])
    time_s = training_time_s(hardware * tokens, gpus, peak_flops, utilization)
    gpu_hours = gpus * time_s / SECONDS_PER_HOUR
    return ComputeEstimate(
        params=params,
        tokens=tokens,
        mode=mode,
        forward_flops_per_token=forward,
        hardware_flops_per_token=hardware,
        model_flops_per_token=model,
        hardware_flops=hardware * tokens,
        model_flops=model * tokens,
        gpus=gpus,
        peak_flops=peak_flops,
        utilization=utilization,
        mfu=utilization * model / hardware,
        time_s=time_s,
        gpu_hours=gpu_hours,
        cost=gpu_hours * price_per_gpu_hour,
        tokens_per_s=tokens / time_s,
    )


def layer_forward_flops_per_token(layer_matmul_params: float, seq: int, d_attn: int) -> float:
    """Forward FLOPs of one transformer layer per token: 2 P_layer + 4 s d_attn.

    Narayanan et al. 2021 (arXiv:2104.04473), Appendix: a layer's forward costs 24 B s h^2
    (QKV, projection and the 4h MLP: 2 FLOPs per weight per token) + 4 B s^2 h (the scores
    Q K^T and their product with V, 2 s h each per token, no causal discount: the one
    attention count, attention_flops_per_token). Written per
    token with the layer's matmul weights P_layer (12 h^2 for GPT) and the attention width
    d_attn = heads * head_dim, so that GQA, SwiGLU and MoE (P_layer counts the experts a token
    passes through) fit the same count.
    """
    if layer_matmul_params < 0 or seq < 1 or d_attn < 1:
        raise ValueError("layer parameters cannot be negative; seq and d_attn must be >= 1")
    return 2 * layer_matmul_params + attention_flops_per_token(1, seq, d_attn)


RECOMPUTE_FLOPS = ("none", "selective", "full")


def training_flops_per_token(
    layer_matmul_params: float,
    n_layer: int,
    logit_params: float,
    seq: int,
    d_attn: int,
    recompute: str = "none",
) -> float:
    """FLOPs one trained token costs, counted the way Narayanan et al. count equation (3).

    Forward, plus backward at twice the forward (3 passes), for the layers and the logit
    layer (2 V h per token). Recomputation runs more forward work that the model does not
    need: "full" the whole forward of every layer again (Narayanan Section 5.1: 4 passes for
    the layers, 3 for the logits), "selective" only the attention core, Q K^T and the product
    with V, 4 s d_attn per layer (Korthikanti et al., arXiv:2205.05198, Appendix A). With
    recompute="full" and GPT's shapes this is equation (3) divided by B s
    (megatron_flops_per_iteration; tests/calc/test_flops.py). recompute="none" gives the
    model FLOPs that MFU counts.
    """
    if recompute not in RECOMPUTE_FLOPS:
        raise ValueError(f"recompute must be one of {RECOMPUTE_FLOPS}, got {recompute!r}")
    if n_layer < 1 or logit_params < 0:
        raise ValueError("n_layer must be at least 1 and logit parameters not negative")
    layer = layer_forward_flops_per_token(layer_matmul_params, seq, d_attn)
    flops = 3 * (n_layer * layer + 2 * logit_params)
    if recompute == "full":
        flops += n_layer * layer
    elif recompute == "selective":
        flops += attention_flops_per_token(n_layer, seq, d_attn)
    return flops
