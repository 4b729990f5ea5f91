"""The inference-memory calculator's inputs: one flat model for the page, the shareable URL,
the JSON API and the command line, with every bound a person can hit explained in words."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.gpus import GPUS
from app.calc.inference import (
    KV_BYTES,
    WEIGHT_BYTES,
    InferenceSetup,
    inference_memory,
    memory_vs_batch,
)
from app.calc.messages import sentence, words_of
from app.calc.model import PRESETS, ModelConfig, model_with
from app.calc.query_config import QUERY_CONFIG

MODEL_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab")

LABELS = {
    "preset": "Model",
    "layers": "Layers L",
    "hidden": "Hidden size h",
    "heads": "Attention heads a",
    "kv_heads": "KV heads k",
    "head_dim": "Head dim d",
    "ffn_hidden": "FFN size",
    "vocab": "Vocabulary V",
    "weight_dtype": "Weights dtype",
    "kv_dtype": "KV cache dtype",
    "tp": "Tensor parallel t",
    "context": "Context s (tokens per sequence)",
    "batch": "Batch b (sequences)",
    "overhead_gb": "Runtime overhead (GB)",
    "utilisation": "GPU memory utilisation u",
    "gpu": "GPU",
    "unit": "Units",
    "attention": "Attention",
    "kv_lora_rank": "Latent d_c (kv_lora_rank)",
    "qk_rope_head_dim": "RoPE key d_h^R (qk_rope_head_dim)",
    "params": "Nominal parameters",
    "kv_bytes_per_token": "KV bytes per token",
}

# MLA's sizes in DeepSeek-V2 and V3 (arXiv:2405.04434 Section 3.1.2; arXiv:2412.19437
# Section 4.2), taken when the query names MLA without them.
MLA_DEFAULTS = {"kv_lora_rank": 512, "qk_rope_head_dim": 64}

Preset = Literal[("custom", *PRESETS)]  # type: ignore[valid-type]
GpuName = Literal[tuple(GPUS)]  # type: ignore[valid-type]
WeightDtypeName = Literal[tuple(WEIGHT_BYTES)]  # type: ignore[valid-type]
KvDtypeName = Literal[tuple(KV_BYTES)]  # type: ignore[valid-type]

# Batch sizes on the chart: powers of two up to a little past what fits.
CHART_MAX_POWER = 16


def _count(le: int, description: str = "") -> Any:
    return Field(ge=1, le=le, description=description)


class InferenceQuery(BaseModel):
    """Everything the inference-memory calculator takes. Model fields left out come from
    `preset`; a custom model starts from Llama 2 7B's shape (SwiGLU, RMSNorm, no biases)."""

    model_config = QUERY_CONFIG

    preset: Preset = Field("llama2-70b", description="A published model, or 'custom'.")
    layers: Annotated[int | None, _count(1000)] = None
    hidden: Annotated[int | None, _count(131_072)] = None
    heads: Annotated[int | None, _count(1024)] = None
    kv_heads: Annotated[int | None, _count(1024, "= heads: MHA; 1: MQA")] = None
    head_dim: Annotated[int | None, _count(1024, "empty: hidden / heads")] = None
    ffn_hidden: Annotated[int | None, _count(1_048_576)] = None
    vocab: Annotated[int | None, _count(2_000_000)] = None

    weight_dtype: WeightDtypeName = "bf16"
    kv_dtype: KvDtypeName = "bf16"
    tp: Annotated[int, _count(1024, "tensor-parallel GPUs the model is split over")] = 4
    context: Annotated[int, _count(16_777_216, "tokens per sequence (prompt + output)")] = 4096
    batch: Annotated[int, _count(1_048_576, "sequences in the batch")] = 16
    overhead_gb: Annotated[float, Field(ge=0, le=1000)] = 1.0
    utilisation: Annotated[float, Field(gt=0, le=1, description="vLLM default 0.9")] = 0.9
    gpu: GpuName = "h100-80gb"
    unit: Literal["GB", "GiB"] = "GB"
    attention: Literal["gqa", "mla"] = Field(
        "gqa", description="gqa: k KV heads (MHA, GQA, MQA); mla: one latent per token and layer"
    )
    kv_lora_rank: Annotated[int | None, _count(65_536, "MLA latent d_c; empty: 512")] = None
    qk_rope_head_dim: Annotated[
        int | None, Field(ge=0, le=4096, description="MLA RoPE key d_h^R; empty: 64")
    ] = None
    params: Annotated[
        float | None,
        Field(ge=1, le=1e14, description="nominal parameter count (e.g. 70e9); empty: exact"),
    ] = None
    kv_bytes_per_token: Annotated[
        float | None,
        Field(ge=1, le=1e9, description="the model's KV bytes per token; empty: from the shape"),
    ] = None

    @model_validator(mode="after")
    def _consistent(self) -> InferenceQuery:
        try:
            inference_memory(self.setup())
        except ValueError as exc:
            raise ValueError(sentence(words_of(exc))) from None
        return self

    def model(self) -> ModelConfig:
        """The preset's shape, with every model field the query gives taken instead."""
        return model_with(self.preset, {n: getattr(self, n) for n in MODEL_FIELDS}, LABELS)

    def setup(self) -> InferenceSetup:
        return InferenceSetup(
            model=self.model(),
            weight_dtype=self.weight_dtype,
            kv_dtype=self.kv_dtype,
            tp=self.tp,
            context=self.context,
            batch=self.batch,
            overhead_bytes=self.overhead_gb * 1e9,
            gpu_memory_bytes=GPUS[self.gpu].memory_bytes,
            utilisation=self.utilisation,
            attention=self.attention,
            kv_lora_rank=self.kv_lora_rank or MLA_DEFAULTS["kv_lora_rank"],
            qk_rope_head_dim=(
                MLA_DEFAULTS["qk_rope_head_dim"]
                if self.qk_rope_head_dim is None
                else self.qk_rope_head_dim
            ),
            params=self.params,
            kv_bytes_per_token=self.kv_bytes_per_token,
        )


def chart_batches(batch: int, largest_batch: int) -> list[int]:
    """Powers of two from 1 to just past both the chosen and the largest fitting batch."""
    top = max(8, 2 * batch, 2 * largest_batch)
    out, b = [], 1
    while b <= top and len(out) <= CHART_MAX_POWER:
        out.append(b)
        b *= 2
    return out


def inference_result(query: InferenceQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data: what the API returns and `--json` prints."""
    setup = query.setup()
    report = inference_memory(setup)
    gpu = GPUS[query.gpu]
    cfg = setup.model
    points = memory_vs_batch(setup, chart_batches(query.batch, report.largest_batch))
    return {
        "model": asdict(cfg),
        "total_params": report.total_params,
        "head_dim": cfg.dim_per_head,
        "kv_heads_per_gpu": report.kv_heads_per_gpu,
        "attention": setup.attention,
        "kv_lora_rank": setup.kv_lora_rank if setup.attention == "mla" else None,
        "qk_rope_head_dim": setup.qk_rope_head_dim if setup.attention == "mla" else None,
        "nominal_params": setup.params is not None,
        "kv_given": setup.kv_bytes_per_token is not None,
        "kv_replicated": report.kv_replicated,
        "kv_bytes_per_token_model": report.kv_bytes_per_token_model,
        "kv_bytes_per_token_gpu": report.kv_bytes_per_token_gpu,
        "weights_bytes": report.term("weights").bytes_,
        "kv_cache_bytes": report.term("kv_cache").bytes_,
        "overhead_bytes": report.term("overhead").bytes_,
        "total_bytes": report.total_bytes,
        "terms": [
            {
                "key": t.key,
                "label": t.label,
                "bytes": t.bytes_,
                "formula": t.formula,
                "substituted": t.substituted,
                "source": t.source,
            }
            for t in report.terms
        ],  # fmt: skip
        "gpu": gpu.name,
        "gpu_memory_bytes": gpu.memory_bytes,
        "utilisation": query.utilisation,
        "budget_bytes": report.budget_bytes,
        "fits": report.fits,
        "headroom_bytes": report.headroom_bytes,
        "largest_batch": report.largest_batch,
        "largest_context": report.largest_context,
        "free_for_kv_bytes": report.free_for_kv_bytes,
        "tokens_that_fit": report.tokens_that_fit,
        "chart": {"batch": [b for b, _ in points], "total_bytes": [m for _, m in points]},
    }
