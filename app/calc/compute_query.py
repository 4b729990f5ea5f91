"""The compute & time calculator's inputs: one flat model shared by the page, the shareable URL,
the JSON API and the command line, and its full answer as plain data."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.flops import (
    MODE_LABELS,
    SECONDS_PER_DAY,
    ComputeEstimate,
    attention_flops_per_token,
    estimate,
    korthikanti_selective_flops_per_iteration,
    megatron_flops_per_iteration,
    utilization_from_throughput,
)
from app.calc.hardware import ACCELERATORS, DTYPE_LABELS, peak_flops
from app.calc.messages import N_, Message, sentence, words_of
from app.calc.model import PRESETS, count_params
from app.calc.query_config import QUERY_CONFIG

LABELS = {
    "preset": "Model",
    "params": "Parameters N",
    "layers": "Layers l",
    "hidden": "Hidden size h",
    "vocab": "Vocabulary V",
    "seq_len": "Sequence length s",
    "tokens": "Tokens D",
    "mode": "Mode",
    "attention_term": "Attention term",
    "batch": "Batch size B (sequences)",
    "gpu": "Accelerator",
    "dtype": "Precision",
    "gpus": "GPUs",
    "utilization": "Utilization (HFU)",
    "price_per_gpu_hour": "Price per GPU-hour",
    "measured_tokens_per_s": "Measured tokens/s",
    "achieved_flops_per_gpu": "Achieved FLOP/s per GPU",
}

Preset = Literal[("custom", *PRESETS)]  # type: ignore[valid-type]
GpuName = Literal[tuple(ACCELERATORS)]  # type: ignore[valid-type]
DtypeName = Literal[tuple(DTYPE_LABELS)]  # type: ignore[valid-type]
ModeName = Literal[tuple(MODE_LABELS)]  # type: ignore[valid-type]

PARAMS_BASIS = (
    "non-embedding parameters a token passes through (Kaplan et al. 2020, §2.1, count N "
    "without embeddings; for a mixture of experts, the active ones)"
)


class ComputeQuery(BaseModel):
    """Everything the compute & time calculator takes. Shape fields left out come from `preset`."""

    model_config = QUERY_CONFIG

    preset: Preset = Field("gpt3-175b", description="A published model, or 'custom'.")
    params: Annotated[
        float | None,
        Field(gt=0, le=1e15, description="N; empty: the preset's non-embedding count"),
    ] = None
    layers: Annotated[int | None, Field(ge=1, le=1000)] = None
    hidden: Annotated[int | None, Field(ge=1, le=262_144)] = None
    vocab: Annotated[int | None, Field(ge=1, le=2_000_000)] = None
    seq_len: Annotated[int, Field(ge=1, le=1_048_576)] = 2048
    tokens: Annotated[float, Field(gt=0, le=1e16, description="D, tokens processed")] = 300e9
    mode: ModeName = "training"
    attention_term: bool = Field(
        False,
        description="add attention's 4 n_layer n_ctx d_attn (the full count; the causal half "
        "is shown as a conversion)",
    )
    batch: Annotated[
        int, Field(ge=1, le=10_000_000, description="sequences per iteration (Megatron's B)")
    ] = 1536
    gpu: GpuName = "a100-80gb-sxm"
    dtype: DtypeName = "bf16"
    gpus: Annotated[int, Field(ge=1, le=10_000_000)] = 1024
    utilization: Annotated[
        float, Field(ge=0.001, le=1, description="fraction of peak the GPUs execute (HFU)")
    ] = 0.45
    price_per_gpu_hour: Annotated[float, Field(ge=0, le=10_000)] = 2.0
    measured_tokens_per_s: Annotated[
        float | None, Field(gt=0, le=1e13, description="empty: no measurement")
    ] = None
    achieved_flops_per_gpu: Annotated[
        float | None,
        Field(
            gt=0, le=1e17, description="FLOP/s one GPU achieves, as a run reports it; empty: none"
        ),
    ] = None

    @model_validator(mode="after")
    def _consistent(self) -> ComputeQuery:
        problems: list[str] = []
        if self.preset == "custom" and self.params is None:
            problems.append(Message(N_("A custom model needs Parameters N")))
        if self.attention_term and self.shape() is None:
            problems.append(Message(N_("The attention term needs Layers l and Hidden size h")))
        if self.mode == "training_selective" and not self.attention_term:
            problems.append(
                Message(
                    N_(
                        "Selective recompute reruns attention's core only: switch on the attention "
                        "term to count it"
                    )
                )
            )
        if self.dtype not in ACCELERATORS[self.gpu].peak_flops:
            acc = ACCELERATORS[self.gpu]
            have = ", ".join(DTYPE_LABELS[d] for d in acc.peak_flops)
            template = N_("The %(gpu)s has no published %(dtype)s peak; pick %(have)s")
            problems.append(Message(template, gpu=acc.name, dtype=self.dtype, have=have))
        if not problems:
            # The calculation's own checks become messages here, never a failure later.
            try:
                result = compute_result(self)
            except (ValueError, ZeroDivisionError, OverflowError) as exc:
                problems.append(sentence(words_of(exc)))
            else:
                hfu = (result["measured"] or {}).get("hfu", 0)
                achieved = (result["achieved"] or {}).get("utilization", 0)
                if achieved > 1:
                    template = N_(
                        "%(achieved)s FLOP/s per GPU is more than the %(gpu)s's dense "
                        "%(dtype)s peak: check the figure, the accelerator or the precision"
                    )
                    problems.append(
                        Message(
                            template,
                            achieved=f"{self.achieved_flops_per_gpu:.4g}",
                            gpu=ACCELERATORS[self.gpu].name,
                            dtype=self.dtype,
                        )
                    )
                if hfu > 1:
                    template = N_(
                        "Measured tokens/s implies %(share)s of peak, more than the hardware "
                        "can do: check the GPUs, the precision or the throughput"
                    )
                    problems.append(Message(template, share=f"{hfu:.0%}"))
        if problems:
            raise ValueError(Message.join("; ", problems))
        return self

    def shape(self) -> tuple[int, int, int, int] | None:
        """(layers, hidden, vocab, d_attn) from the fields or the preset; None if unknown."""
        base = PRESETS.get(self.preset)
        layers = self.layers or (base.layers if base else None)
        hidden = self.hidden or (base.hidden if base else None)
        vocab = self.vocab or (base.vocab if base else None)
        if layers is None or hidden is None:
            return None
        # Kaplan's d_attn is the attention width, heads x head_dim (= h for GPT-3 and Llama).
        d_attn = base.heads * base.dim_per_head if base and not self.hidden else hidden
        return layers, hidden, vocab or 0, d_attn

    def model_params(self) -> tuple[float, str]:
        """N and where it comes from."""
        if self.params is not None:
            return self.params, "given"
        counts = count_params(PRESETS[self.preset])
        n = counts.active - counts.embedding - counts.positions - counts.lm_head
        return float(n), PARAMS_BASIS


def _estimate(query: ComputeQuery) -> ComputeEstimate:
    n, _ = query.model_params()
    shape = query.shape() if query.attention_term else None
    layers, _, _, d_attn = shape or (0, 0, 0, 0)
    return estimate(
        params=n,
        tokens=query.tokens,
        mode=query.mode,
        gpus=query.gpus,
        peak_flops=peak_flops(ACCELERATORS[query.gpu], query.dtype),
        utilization=query.utilization,
        price_per_gpu_hour=query.price_per_gpu_hour,
        n_layer=layers,
        n_ctx=query.seq_len if shape else 0,
        d_attn=d_attn,
    )


def _megatron(query: ComputeQuery) -> dict[str, Any] | None:
    """Narayanan et al. 2021 eq. (3) for the same run, when the shape is known (training only);
    with selective recompute, also Korthikanti et al.'s equation (8), whose count differs."""
    shape = query.shape()
    if query.mode == "inference" or shape is None or not shape[2]:
        return None
    layers, hidden, vocab, _ = shape
    recompute = query.mode == "training_recompute"
    per_iteration = megatron_flops_per_iteration(
        query.batch, query.seq_len, layers, hidden, vocab, recompute=recompute
    )
    iterations = query.tokens / (query.batch * query.seq_len)
    selective = None
    if query.mode == "training_selective":
        paper = korthikanti_selective_flops_per_iteration(
            query.batch, query.seq_len, layers, hidden, vocab
        )
        # ShardLab's count for the same GPT block: eq. (3) without recompute + one forward of
        # the attention core per layer (flops.training_flops_per_token's "selective").
        ours = per_iteration + query.batch * query.seq_len * attention_flops_per_token(
            layers, query.seq_len, hidden
        )
        selective = {
            "paper_flops_per_iteration": paper,
            "flops_per_iteration": ours,
            "paper_extra": paper / per_iteration - 1,
            "extra": ours / per_iteration - 1,
        }
    return {
        "selective": selective,
        "recompute": recompute,
        "batch": query.batch,
        "seq_len": query.seq_len,
        "layers": layers,
        "hidden": hidden,
        "vocab": vocab,
        "flops_per_iteration": per_iteration,
        "iterations": iterations,
        "total_flops": per_iteration * iterations,
    }


def compute_result(query: ComputeQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data: what the API returns and `--json` prints."""
    est = _estimate(query)
    n, basis = query.model_params()
    acc = ACCELERATORS[query.gpu]
    measured = None
    if query.measured_tokens_per_s is not None:
        tps = query.measured_tokens_per_s
        measured = {
            "tokens_per_s": tps,
            "mfu": utilization_from_throughput(
                tps, est.model_flops_per_token, est.gpus, est.peak_flops
            ),
            "hfu": utilization_from_throughput(
                tps, est.hardware_flops_per_token, est.gpus, est.peak_flops
            ),
            "time_s": query.tokens / tps,
        }
    achieved = None
    if query.achieved_flops_per_gpu is not None:
        # A run's reported FLOP/s per GPU, counted however the run counts (Megatron's eq. (3)
        # includes recompute, so it is hardware FLOPs): utilization of peak, the aggregate,
        # and what the aggregate does to this calculator's executed FLOPs.
        x = query.achieved_flops_per_gpu
        aggregate = x * est.gpus
        achieved = {
            "flops_per_gpu": x,
            "utilization": x / est.peak_flops,
            "aggregate_flops": aggregate,
            "tokens_per_s": aggregate / est.hardware_flops_per_token,
            "time_s": est.hardware_flops / aggregate,
            "time_days": est.hardware_flops / aggregate / SECONDS_PER_DAY,
        }
    attention = None
    shape = query.shape() if query.attention_term else None
    if shape:
        layers, _, _, d_attn = shape
        attention = {
            "convention": "full",
            "forward_flops_per_token": attention_flops_per_token(layers, query.seq_len, d_attn),
            "causal_forward_flops_per_token": attention_flops_per_token(
                layers, query.seq_len, d_attn, causal=True
            ),
        }
    return {
        "model": PRESETS[query.preset].name if query.preset in PRESETS else "custom",
        "params": n,
        "params_basis": basis,
        "tokens": est.tokens,
        "mode": est.mode,
        "gpu": acc.name,
        "dtype": query.dtype,
        "peak_flops_per_gpu": est.peak_flops,
        "gpus": est.gpus,
        "forward_flops_per_token": est.forward_flops_per_token,
        "flops_per_token": est.hardware_flops_per_token,
        "model_flops_per_token": est.model_flops_per_token,
        "total_flops": est.hardware_flops,
        "model_flops": est.model_flops,
        "utilization": est.utilization,
        "mfu": est.mfu,
        "time_s": est.time_s,
        "time_days": est.time_s / SECONDS_PER_DAY,
        "gpu_hours": est.gpu_hours,
        "cost": est.cost,
        "tokens_per_s": est.tokens_per_s,
        "megatron": _megatron(query),
        "measured": measured,
        "achieved": achieved,
        "attention": attention,
    }
