"""The training-memory calculator's inputs: one flat model shared by the page, the shareable
URL, the JSON API and the command line, with every bound a person can hit explained in words."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.activations import ActivationSetup
from app.calc.gpus import GPUS
from app.calc.messages import N_, Message, sentence, words_of
from app.calc.model import PRESETS, ModelConfig, model_with
from app.calc.performance import measured_terms
from app.calc.precision import OPTIMIZERS, RECIPES
from app.calc.profiles import default_profile
from app.calc.query_config import QUERY_CONFIG
from app.calc.training import training_memory, verdict
from app.calc.training_types import Parallelism, TrainingSetup

MODEL_FIELDS = (
    "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "ffn_type", "vocab",
    "norm", "tied_embeddings", "attention_bias", "attention_out_bias", "mlp_bias",
    "learned_positions", "experts", "top_k", "shared_experts",
)  # fmt: skip

LABELS = {
    "preset": "Model",
    "layers": "Layers L",
    "hidden": "Hidden size h",
    "heads": "Attention heads a",
    "kv_heads": "KV heads",
    "head_dim": "Head dim",
    "ffn_hidden": "FFN size",
    "ffn_type": "FFN type",
    "vocab": "Vocabulary V",
    "norm": "Norm",
    "learned_positions": "Learned positions",
    "experts": "Experts",
    "top_k": "Top-k",
    "shared_experts": "Shared experts",
    "dp": "Data parallel (DP)",
    "tp": "Tensor parallel (TP)",
    "pp": "Pipeline parallel (PP)",
    "ep": "Expert parallel (EP)",
    "cp": "Context parallel (CP)",
    "zero_stage": "ZeRO stage",
    "recipe": "Precision",
    "optimizer": "Optimizer",
    "seq_len": "Sequence length",
    "micro_batch": "Micro-batch size",
    "microbatches": "Micro-batches per step",
    "recompute": "Recompute",
    "schedule": "Pipeline schedule",
    "virtual_stages": "Virtual stages",
    "bucket_mb": "Bucket size (MB)",
    "grad_bucket_copy": "DDP copies gradients into its buckets",
    "zero3_prefetch_layers": "ZeRO-3 prefetch (layers)",
    "overhead_gb": "Runtime overhead (GB)",
    "measured": "As a GPU reports it",
    "gpu": "GPU",
    "unit": "Units",
}

Preset = Literal[("custom", *PRESETS)]  # type: ignore[valid-type]
RecipeName = Literal[tuple(RECIPES)]  # type: ignore[valid-type]
OptimizerName = Literal[tuple(OPTIMIZERS)]  # type: ignore[valid-type]
GpuName = Literal[tuple(GPUS)]  # type: ignore[valid-type]


def _count(le: int, ge: int = 1, description: str = "") -> object:
    return Field(ge=ge, le=le, description=description)


class ModelQuery(BaseModel):
    """A model as the calculators' forms take it: a preset, and any shape field given instead.
    Shared by the training-memory and planner queries."""

    model_config = QUERY_CONFIG

    preset: Preset = Field("llama3-70b", description="A published model, or 'custom'.")
    layers: Annotated[int | None, _count(1000)] = None
    hidden: Annotated[int | None, _count(131_072)] = None
    heads: Annotated[int | None, _count(1024)] = None
    kv_heads: Annotated[int | None, _count(1024, description="= heads: MHA; 1: MQA")] = None
    head_dim: Annotated[int | None, _count(1024, description="empty: hidden / heads")] = None
    ffn_hidden: Annotated[int | None, _count(1_048_576)] = None
    ffn_type: Literal["gelu", "swiglu"] | None = None
    vocab: Annotated[int | None, _count(2_000_000)] = None
    norm: Literal["layernorm", "rmsnorm"] | None = None
    tied_embeddings: bool | None = None
    attention_bias: bool | None = None
    attention_out_bias: bool | None = Field(
        None, description="Bias on the attention output projection; empty: as attention_bias."
    )
    mlp_bias: bool | None = None
    learned_positions: Annotated[int | None, _count(1_000_000, ge=0)] = None
    experts: Annotated[int | None, _count(1024)] = None
    top_k: Annotated[int | None, _count(1024)] = None
    shared_experts: Annotated[int | None, _count(64, ge=0)] = None

    def model(self) -> ModelConfig:
        """The preset's shape, with every model field the query gives taken instead."""
        return model_with(self.preset, {n: getattr(self, n) for n in MODEL_FIELDS}, LABELS)

    def shape_problems(self, cfg: ModelConfig) -> list[str]:
        """What makes the shape no transformer, in the form's words."""
        problems = []
        if cfg.kv_heads > cfg.heads or cfg.heads % cfg.kv_heads:
            problems.append(Message(N_("KV heads must divide the attention heads")))
        if cfg.top_k > cfg.experts:
            problems.append(Message(N_("Top-k cannot exceed the number of experts")))
        return problems


class TrainingQuery(ModelQuery):
    """Everything the training-memory calculator takes. Model fields left out come from `preset`."""

    dp: Annotated[int, _count(65_536, description="the degree ZeRO shards over")] = 4
    tp: Annotated[int, _count(512)] = 8
    pp: Annotated[int, _count(512)] = 2
    ep: Annotated[int, _count(1024)] = 1
    cp: Annotated[int, _count(1024)] = 1
    zero_stage: Annotated[int, Field(ge=0, le=3)] = 1
    distributed_optimizer: bool = False
    offload_optimizer: bool = False
    offload_params: bool = False

    recipe: RecipeName = "mixed_bf16"
    optimizer: OptimizerName = "adam"

    seq_len: Annotated[int, _count(1_048_576)] = 8192
    micro_batch: Annotated[int, _count(4096)] = 1
    microbatches: Annotated[int, _count(65_536, description="gradient accumulation steps")] = 8
    sequence_parallel: bool = True
    recompute: Literal["none", "selective", "full"] = "selective"
    flash_attention: bool = False
    dropout: bool = False
    schedule: Literal["1f1b", "gpipe", "interleaved"] = "1f1b"
    virtual_stages: Annotated[int, _count(64)] = 1
    bucket_mb: Annotated[float, Field(ge=0, le=100_000)] = 25.0
    grad_bucket_copy: bool = Field(
        False,
        description="DDP and ZeRO-1 keep their all-reduce buckets beside the gradients, a "
        "second copy of them: torch DDP's default (gradient_as_bucket_view=False). Off: the "
        "gradients are views of the buckets (Megatron-LM; gradient_as_bucket_view=True)",
    )
    zero3_prefetch_layers: Annotated[int, _count(64, ge=0)] = 1
    overhead_gb: Annotated[float, Field(ge=0, le=1000)] = 2.0
    measured: bool = Field(
        False,
        description="add what a GPU reports beyond the textbook terms: the loss's temporaries "
        "(one stage), NCCL's buffers per communicator and the caching allocator's reserve, "
        "with the default performance profile's values (app.calc.performance); the overhead "
        "then stands for the CUDA context alone",
    )

    gpu: GpuName = "h100-80gb"
    unit: Literal["GB", "GiB"] = "GB"

    @model_validator(mode="after")
    def _consistent(self) -> TrainingQuery:
        cfg = self.model()
        problems = self.shape_problems(cfg)
        if cfg.heads % self.tp:
            problems.append(Message(N_("Tensor parallel (TP) must divide the attention heads")))
        if self.pp > cfg.layers:
            problems.append(Message(N_("Pipeline parallel (PP) cannot exceed the layers")))
        if cfg.experts % self.ep:
            problems.append(Message(N_("Expert parallel (EP) must divide the experts")))
        if self.seq_len % self.cp:
            problems.append(Message(N_("Context parallel (CP) must divide the sequence length")))
        if self.offload_params and self.zero_stage != 3:
            problems.append(Message(N_("Parameter offload needs ZeRO stage 3")))
        if self.schedule == "interleaved" and (self.pp == 1 or self.virtual_stages < 2):
            template = N_(
                "The interleaved schedule needs pipeline parallel (PP) and virtual stages above 1"
            )
            problems.append(Message(template))
        if not problems:
            # The calculator's own checks (shapes no transformer has, EP that does not divide
            # the data-parallel ranks, ...) become messages here, never a failure later.
            try:
                training_memory(self.setup())
            except ValueError as exc:
                problems.append(sentence(words_of(exc)))
        if problems:
            raise ValueError(Message.join("; ", problems))
        return self

    def setup(self) -> TrainingSetup:
        return TrainingSetup(
            model=self.model(),
            parallel=Parallelism(
                dp=self.dp, tp=self.tp, pp=self.pp, ep=self.ep, cp=self.cp,
                zero_stage=self.zero_stage, distributed_optimizer=self.distributed_optimizer,
                offload_optimizer=self.offload_optimizer, offload_params=self.offload_params,
            ),
            activations=ActivationSetup(
                seq_len=self.seq_len, micro_batch=self.micro_batch, tp=self.tp,
                sp=self.sequence_parallel, cp=self.cp, recompute=self.recompute,
                flash_attention=self.flash_attention, dropout=self.dropout,
            ),
            recipe=self.recipe,
            optimizer=self.optimizer,
            microbatches=self.microbatches,
            schedule=self.schedule,
            virtual_stages=self.virtual_stages,
            bucket_mb=self.bucket_mb,
            grad_bucket_copy=self.grad_bucket_copy,
            zero3_prefetch_layers=self.zero3_prefetch_layers,
            overhead_bytes=self.overhead_gb * 1e9,
            measured=measured_terms(default_profile()) if self.measured else None,
        )  # fmt: skip


def training_result(query: TrainingQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data: what the API returns and `--json` prints."""
    setup = query.setup()
    report = training_memory(setup)
    gpu = GPUS[query.gpu]
    judged = verdict(setup, gpu.memory_bytes)
    return {
        "model": asdict(setup.model),
        "total_params": report.params.total,
        "active_params": report.params.active,
        "gpu_bytes": report.gpu_bytes,
        "cpu_bytes": report.cpu_bytes,
        "terms": [
            {
                k: getattr(t, k)
                for k in (
                    "key",
                    "label",
                    "gpu_bytes",
                    "cpu_bytes",
                    "formula",
                    "substituted",
                    "source",
                )
            }
            for t in report.terms
        ],  # fmt: skip
        "gpu": gpu.name,
        "gpu_memory_bytes": gpu.memory_bytes,
        "fits": judged.fits,
        "headroom_bytes": judged.headroom_bytes,
        "largest_micro_batch": judged.largest_micro_batch,
    }
