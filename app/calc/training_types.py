"""The training-memory calculator's inputs and its answer: the setup (parallelism, and the
checks a setup must pass), each term, the report and the verdict; and how a term writes its
numbers in LaTeX. The conventions are app.calc.training's docstring."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from app.calc.activations import ActivationSetup
from app.calc.messages import N_, Message
from app.calc.model import ModelConfig, ParamCount
from app.calc.units import GB


@dataclass(frozen=True)
class Parallelism:
    """Degrees of parallelism and memory-saving switches. See app.calc.training's docstring."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    zero_stage: int = 0  # 0..3, sharding over N_d = dp * cp (not the world size)
    distributed_optimizer: bool = False  # Megatron: master + optimizer sharded, like ZeRO-1
    offload_optimizer: bool = False  # ZeRO-Offload: master + optimizer states in CPU memory
    offload_params: bool = False  # ZeRO-Infinity: 16-bit weights in CPU memory (ZeRO-3 only)

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def dense_shard_ways(self) -> int:
        """N_d: the ranks that hold the same dense weights and reduce their gradients."""
        return self.dp * self.cp

    @property
    def expert_shard_ways(self) -> int:
        """N_e: the ranks that hold the same experts (the expert data-parallel degree)."""
        return self.dp * self.cp // self.ep


@dataclass(frozen=True)
class TrainingSetup:
    model: ModelConfig
    parallel: Parallelism
    activations: ActivationSetup
    recipe: str = "mixed_bf16"
    optimizer: str = "adam"
    microbatches: int = 1  # gradient-accumulation steps: micro-batches per step per pipeline
    schedule: str = "1f1b"
    virtual_stages: int = 1
    bucket_mb: float = 25.0  # ZeRO-2's reduce bucket; torch DDP's bucket_cap_mb default (MiB)
    grad_bucket_copy: bool = False  # DDP/ZeRO-1 buckets beside the gradients (torch's default)
    zero3_prefetch_layers: int = 1  # DeepSpeed's estimator counts one largest layer
    overhead_bytes: float = 2e9  # CUDA context + NCCL buffers (app.calc.training's docstring)
    # None: the textbook terms alone; else the terms a GPU reports beyond them
    # (app.calc.training_measured)
    measured: MeasuredTerms | None = None


@dataclass(frozen=True)
class MeasuredTerms:
    """What a GPU reports beyond the textbook count (app.calc.performance's parameters)."""

    logit_bytes: float  # per logit element at the loss's peak (the textbook counts 4)
    nccl_bytes: float  # per communicator
    allocator_fraction: float  # reserved over allocated


@dataclass(frozen=True)
class Term:
    key: str
    label: str
    gpu_bytes: float
    cpu_bytes: float
    formula: str  # LaTeX, symbolic
    source: str
    # Writes `substituted` when it is read: the planner reads thousands of reports for their
    # bytes alone, and formatting their numbers was a fifth of a large search
    render: Callable[[], str] = field(repr=False, compare=False)

    @property
    def substituted(self) -> str:
        """LaTeX, this setup's numbers, ending in "= value GB"."""
        return self.render()


@dataclass(frozen=True)
class MemoryReport:
    setup: TrainingSetup
    params: ParamCount
    params_on_gpu: float  # parameters of this GPU's stage and tp/ep shard, before ZeRO
    layers_in_stage: int
    in_flight: float  # micro-batches whose activations the stage holds at the peak
    terms: list[Term] = field(default_factory=list)

    @property
    def gpu_bytes(self) -> float:
        return sum(t.gpu_bytes for t in self.terms)

    @property
    def cpu_bytes(self) -> float:
        return sum(t.cpu_bytes for t in self.terms)

    @property
    def model_states_gpu_bytes(self) -> float:
        """Weights, gradients, master weights and optimizer states on the GPU."""
        return sum(t.gpu_bytes for t in self.terms if t.key in MODEL_STATE_KEYS)

    def term(self, key: str) -> Term:
        for t in self.terms:
            if t.key == key:
                return t
        raise KeyError(key)


MODEL_STATE_KEYS = ("weights", "grads", "master", "optimizer")


@dataclass(frozen=True)
class Verdict:
    fits: bool
    headroom_bytes: float
    largest_micro_batch: int  # 0 when even one sequence does not fit


def validate_setup(setup: TrainingSetup) -> None:
    p, cfg = setup.parallel, setup.model
    for name in ("dp", "tp", "pp", "ep", "cp"):
        if getattr(p, name) < 1:
            raise ValueError(f"{name} must be at least 1")
    if p.zero_stage not in (0, 1, 2, 3):
        raise ValueError("zero_stage must be 0, 1, 2 or 3")
    if p.offload_params and p.zero_stage != 3:
        raise ValueError("offload_params needs zero_stage 3")
    if p.pp > cfg.layers:
        template = N_("pp (%(pp)s) cannot exceed the model's %(layers)s layers")
        raise ValueError(Message(template, pp=p.pp, layers=cfg.layers))
    if p.ep > 1:
        if cfg.experts <= 1:
            raise ValueError(Message(N_("ep > 1 needs a mixture-of-experts model")))
        if cfg.experts % p.ep:
            template = N_("ep (%(ep)s) must divide the %(experts)s experts")
            raise ValueError(Message(template, ep=p.ep, experts=cfg.experts))
        if (p.dp * p.cp) % p.ep:
            template = N_("ep (%(ep)s) must divide dp * cp (%(dp_cp)s)")
            raise ValueError(Message(template, ep=p.ep, dp_cp=p.dp * p.cp))
    if setup.microbatches < 1:
        raise ValueError("microbatches must be at least 1")
    if setup.bucket_mb < 0 or setup.overhead_bytes < 0 or setup.zero3_prefetch_layers < 0:
        raise ValueError("bucket_mb, overhead_bytes and zero3_prefetch_layers cannot be negative")


def tex(x: float) -> str:
    """A number for LaTeX: integers below 10^5 as they are, the rest as m x 10^e."""
    if x == int(x) and abs(x) < 1e5:
        return str(int(x))
    if x == 0:
        return "0"
    exp = math.floor(math.log10(abs(x)))
    if -3 <= exp < 5:
        return f"{x:.4g}"
    return rf"{x / 10**exp:.4g}\times10^{{{exp}}}"


def tex_gb(x: float) -> str:
    return rf"{x / GB:.2f}\ \text{{GB}}"
