"""What the planner is asked: the cluster, the request, and the knobs of one layout."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.calc.comm_volume import DTYPE_BYTES
from app.calc.gpus import GPUS
from app.calc.hardware import ACCELERATORS, Accelerator, peak_flops
from app.calc.links import LINKS, Link
from app.calc.messages import N_, Message
from app.calc.model import PRESETS, ModelConfig, from_hf_config
from app.calc.performance import PerformanceProfile
from app.calc.profiles import default_profile

MAMF_SOURCE = (
    "stas00/ml-engineering compute/accelerator/README.md, 'Maximum Achievable Matmul FLOPS "
    "comparison table' (BF16 matmul, CUDA 12.1)"
)
# Measured best matmul throughput / dense peak, per accelerator slug (MAMF_SOURCE).
MAMF_EFFICIENCY: dict[str, float] = {"a100-80gb-sxm": 267.9 / 312, "h100-sxm": 792.1 / 989}
DEFAULT_MATMUL_EFFICIENCY = 0.80  # H100 SXM's 80.1%, rounded, where none is measured


def mamf_efficiency(slug: str) -> float:
    """The matmul ceiling over the dense peak the planner assumes for an accelerator preset."""
    return MAMF_EFFICIENCY.get(slug, DEFAULT_MATMUL_EFFICIENCY)


PLACEMENT_ORDER = ("tp", "cp", "ep", "dp", "pp")
PLACEMENT_SOURCE = (
    "Megatron-Core parallel_state.initialize_model_parallel(order='tp-cp-ep-dp-pp'): "
    "tp fastest-varying, pp slowest"
)
STEP_TERMS = (
    "compute",
    "memory_bound",
    "recompute",
    "exposed_tp",
    "exposed_cp_ep",
    "exposed_pp",
    "exposed_dp",
    "bubble",
    "fixed",
)
# Each term named inside a sentence ("the largest gap is ..."): the why-not answer and the
# layout quizzes say them, in the reader's language where a page shows them.
STEP_TERM_WORDS = {
    "compute": N_("compute"),
    "memory_bound": N_("memory-bound work (norms, activations, loss, optimizer)"),
    "recompute": N_("the recomputation"),
    "exposed_tp": N_("exposed TP communication"),
    "exposed_cp_ep": N_("exposed CP/EP communication"),
    "exposed_pp": N_("exposed pipeline sends"),
    "exposed_dp": N_("exposed DP (gradient reduce / ZeRO gathers)"),
    "bubble": N_("the pipeline bubble"),
    "fixed": N_("fixed costs (kernel launches, per micro-batch and per step)"),
}
PIPELINE_SCHEDULES = ("1f1b", "interleaved", "zb-h1", "gpipe")
RECOMPUTE = ("none", "selective", "full")
ZERO_OPTIONS = ((0, False), (1, False), (2, False), (3, False), (0, True))


@dataclass(frozen=True)
class Cluster:
    """The machines: an accelerator type, its memory, how many per node, and two links."""

    accelerator: Accelerator  # peak FLOP/s per dtype (app.calc.hardware)
    gpu_memory_bytes: float  # what a run can fill (app.calc.gpus, nvidia-smi total)
    gpus_per_node: int
    nodes: int
    intra_node: Link  # e.g. NVLink (app.calc.links)
    inter_node: Link  # e.g. InfiniBand NDR, one NIC per GPU

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


def cluster(
    accelerator: str = "h100-sxm",
    gpu: str = "h100-80gb",
    gpus_per_node: int = 8,
    nodes: int = 1,
    intra_node: str = "nvlink4",
    inter_node: str = "ib-ndr",
) -> Cluster:
    """A Cluster from the presets' slugs (hardware.ACCELERATORS, gpus.GPUS, links.LINKS)."""
    if gpus_per_node < 1 or nodes < 1:
        raise ValueError("gpus_per_node and nodes must be at least 1")
    for slug, table in ((accelerator, ACCELERATORS), (gpu, GPUS), (intra_node, LINKS),
                        (inter_node, LINKS)):  # fmt: skip
        if slug not in table:
            raise ValueError(f"unknown preset {slug!r}; choose one of {', '.join(table)}")
    return Cluster(
        accelerator=ACCELERATORS[accelerator],
        gpu_memory_bytes=GPUS[gpu].memory_bytes,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        intra_node=LINKS[intra_node],
        inter_node=LINKS[inter_node],
    )


def resolve_model(model: str | Mapping[str, Any] | ModelConfig) -> ModelConfig:
    """A ModelConfig from a preset name (model.PRESETS), a Hugging Face config dict, or itself."""
    if isinstance(model, ModelConfig):
        return model
    if isinstance(model, str):
        if model not in PRESETS:
            raise ValueError(f"unknown model {model!r}; choose one of {', '.join(PRESETS)}")
        return PRESETS[model]
    return from_hf_config(model)


@dataclass(frozen=True)
class PlanRequest:
    """What to plan for. Knob lists bound the search; everything else is the model's input."""

    model: ModelConfig
    cluster: Cluster
    global_batch_tokens: int  # tokens per optimizer step
    seq_len: int
    token_budget: float  # tokens to train on, for days
    dtype: str = "bf16"  # the matmuls' peak (hardware.peak_flops) and the wire format
    recipe: str = "mixed_bf16"  # app.calc.precision
    optimizer: str = "adam"
    flash_attention: bool = True
    dropout: bool = False
    # Without flash attention, Megatron-DeepSpeed's --abort-on-unmet-fused-kernel-constraints
    # (BLOOM's run) refuses a layout whose fused softmax kernel cannot run (rule fused_softmax)
    fused_softmax_required: bool = False
    # Full recompute keeps each layer's input split over tp (app.calc.activations)
    distribute_saved_activations: bool = False
    matmul_efficiency: float | None = None  # None: MAMF of the accelerator (module docstring)
    # The performance model's parameters (app.calc.performance); None: the built-in profile
    # fitted to published runs (app.calc.profiles)
    profile: PerformanceProfile = field(default_factory=lambda: default_profile())
    uneven_pipeline: bool = False  # allow pp (or pp x v) not dividing the layers: ceil(L/p)
    schedules: tuple[str, ...] = ("1f1b", "interleaved", "zb-h1")
    recompute_modes: tuple[str, ...] = RECOMPUTE
    # What the framework offers, for the search and the rules: a run of 2021 had neither
    # sequence nor context parallelism, nor any ZeRO (app.calc.planner.published).
    sequence_parallel: bool = True
    context_parallel: bool = True
    zero_options: tuple[tuple[int, bool], ...] = ZERO_OPTIONS
    max_micro_batch: int = 64
    max_virtual_stages: int = 8
    top: int = 50  # ranked layouts kept in the Plan

    @property
    def global_batch_sequences(self) -> int:
        return self.global_batch_tokens // self.seq_len

    @property
    def overhead_bytes(self) -> float:
        """The CUDA context on each GPU; NCCL's buffers are counted per communicator."""
        return self.profile.context_bytes

    @property
    def efficiency(self) -> float:
        if self.matmul_efficiency is not None:
            return self.matmul_efficiency
        return mamf_efficiency(self.cluster.accelerator.slug)


def plan_request(
    model: str | Mapping[str, Any] | ModelConfig,
    cluster_: Cluster,
    global_batch_tokens: int,
    seq_len: int,
    token_budget: float,
    **options: Any,
) -> PlanRequest:
    """A PlanRequest from a preset name, HF config dict or ModelConfig, checked."""
    request = PlanRequest(
        resolve_model(model), cluster_, global_batch_tokens, seq_len, token_budget, **options
    )
    check_request(request)
    return request


def check_request(req: PlanRequest) -> None:
    if req.seq_len < 1 or req.global_batch_tokens < req.seq_len:
        template = N_("the global batch must hold at least one sequence of seq_len >= 1")
        raise ValueError(Message(template))
    if req.global_batch_tokens % req.seq_len:
        template = N_(
            "the global batch (%(tokens)s tokens) must be a whole number of "
            "%(seq_len)s-token sequences"
        )
        raise ValueError(Message(template, tokens=req.global_batch_tokens, seq_len=req.seq_len))
    if req.token_budget <= 0:
        raise ValueError("the token budget must be positive")
    if not 0 < req.efficiency <= 1:
        raise ValueError("matmul_efficiency must be in (0, 1]")
    if req.dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}")
    peak_flops(req.cluster.accelerator, req.dtype)
    if not set(req.zero_options) <= set(ZERO_OPTIONS) or (0, False) not in req.zero_options:
        raise ValueError("zero_options must be among ZERO_OPTIONS and include (0, False)")
    unknown = set(req.schedules) - set(PIPELINE_SCHEDULES)
    unknown |= set(req.recompute_modes) - set(RECOMPUTE)
    if unknown:
        raise ValueError(f"unknown schedules or recompute modes: {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class Layout:
    """The knobs of one layout. sequence_parallel None means on exactly when tp > 1."""

    dp: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero_stage: int = 0
    distributed_optimizer: bool = False
    recompute: str = "none"
    micro_batch: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    sequence_parallel: bool | None = None

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def sp(self) -> bool:
        return self.tp > 1 if self.sequence_parallel is None else self.sequence_parallel

    def describe(self) -> str:
        zero = "dist-opt" if self.distributed_optimizer else f"ZeRO-{self.zero_stage}"
        sched = self.schedule + (f" v={self.virtual_stages}" if self.virtual_stages > 1 else "")
        return (
            f"dp={self.dp} tp={self.tp} pp={self.pp} cp={self.cp} ep={self.ep} {zero} "
            f"recompute={self.recompute} b={self.micro_batch} {sched}"
        )
