r"""How long a training step's work takes on real hardware: a performance profile whose every
parameter has a physical meaning, and the kernel-level times the planner adds up.

A first-order model runs every FLOP at one efficiency and every byte at the link's datasheet
speed. Measured runs are slower, for reasons each parameter here names (Isaev et al.,
Calculon, SC'23, Section 4, model the same effects: size-dependent matmul efficiency, vector
work, link efficiency, overlap slow-down and fixed costs):

- **GEMMs** run at `gemm_efficiency` x the accelerator's matmul ceiling (its measured MAMF,
  app.calc.planner.request.MAMF_EFFICIENCY, or a measured `gemm_flops`) when large; a GEMM
  whose shape after the TP/CP split is thin is limited by the bytes it moves (the roofline,
  Williams et al. 2009): t = max(F / (eta_g C), B / (eta_m W)) + t_k.
- **Attention core** (FlashAttention) runs its FLOPs at `attention_efficiency` x the dense
  peak: its backward has 5 matmuls to the forward's 2 (Dao 2023, arXiv:2307.08691, Section 3.1),
  so a layer's core costs 3.5 forward FLOPs' worth; without flash kernels the core is two
  batched GEMMs and a softmax over the s x s scores, timed as GEMMs and bytes.
- **Memory-bound work** (norms, residual adds, rotary, the MLP's activation, dropout,
  cross-entropy, the optimizer step) is timed by the bytes it moves at `hbm_efficiency` x the
  HBM datasheet bandwidth (or a measured `hbm_bytes_per_s`).
- **Kernels** each cost `kernel_overhead_s` beyond their work: launch, ramp-up and the tail
  wave that the GPU cannot fill. A micro-batch costs `microbatch_overhead_s` more (schedule
  bookkeeping, pipeline send set-up, data), a step `step_overhead_s` (the optimizer's launch,
  gradient clipping's sync, logging).
- **Links** reach `intra_link_efficiency` / `inter_link_efficiency` of their datasheet
  bandwidth as NCCL's bus bandwidth (nccl-tests' busBw, which for a ring is what each GPU
  sends per second).
- **Overlap costs something**: communication hidden behind compute slows that compute by
  `overlap_slowdown` seconds per second overlapped (NCCL's kernels take SMs and HBM
  bandwidth); DP communication can hide behind `dp_overlap` of one micro-batch's compute (2/3:
  the backward, where the gradients are made).

Memory as measured adds what a textbook count leaves out: the loss's temporaries over the
logits (`logit_bytes` per logit element at the peak, in place of the 4 of an fp32 copy), the
CUDA context, NCCL's buffers per communicator and the caching allocator's reserved memory
over what it hands out (`allocator_fraction`).

A profile belongs to a framework on a cluster, not to a GPU alone: the same GPU reaches
different efficiencies under different software. app.calc.calibration fits one to measured
runs; app/calc/profiles/ holds the ones fitted to published runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from app.calc.messages import N_, Message
from app.calc.training_types import MeasuredTerms


@dataclass(frozen=True)
class Parameter:
    """One named parameter: what it means, its unit, and the bounds that keep it physical."""

    name: str
    meaning: str
    unit: str
    low: float
    high: float
    default: float
    source: str


# Defaults where no fit says otherwise; each default is a physical reading, cited.
PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter(
            "gemm_efficiency",
            N_("share of the matmul ceiling a large GEMM reaches inside a training step"),
            "fraction",
            0.3,
            1.0,
            1.0,
            "1 = the measured MAMF ceiling itself (stas00/ml-engineering, compute/accelerator)",
        ),
        Parameter(
            "attention_efficiency",
            N_("share of the dense peak the fused attention kernels reach (forward + backward)"),
            "fraction",
            0.1,
            0.9,
            0.35,
            "FlashAttention-2 reaches 35% of the H100's peak (Shah et al. 2024, "
            "FlashAttention-3, arXiv:2407.08608, abstract) and 50-73% of the A100's (Dao 2023, "
            "arXiv:2307.08691, abstract); FlashAttention-3 up to 75% on H100",
        ),
        Parameter(
            "hbm_efficiency",
            N_("share of the HBM datasheet bandwidth memory-bound kernels reach"),
            "fraction",
            0.2,
            1.0,
            0.8,
            "elementwise kernels reach 80-90% of HBM bandwidth when large (NVIDIA, GPU "
            "Performance Background User's Guide, 'Understanding Performance')",
        ),
        Parameter(
            "kernel_overhead_s",
            N_("fixed cost of one kernel beyond its work (launch, ramp-up, tail wave)"),
            "s",
            0.0,
            50e-6,
            4e-6,
            "a CUDA kernel launch costs a few microseconds (CUDA C++ Best Practices Guide)",
        ),
        Parameter(
            "microbatch_overhead_s",
            N_("fixed cost of one micro-batch on one stage (schedule, send set-up, data)"),
            "s",
            0.0,
            0.1,
            0.0,
            "0 unless fitted",
        ),
        Parameter(
            "step_overhead_s",
            N_("fixed cost of one optimizer step (optimizer launch, clipping sync, logging)"),
            "s",
            0.0,
            10.0,
            0.0,
            "0 unless fitted",
        ),
        Parameter(
            "intra_link_efficiency",
            N_("NCCL bus bandwidth inside a node over the link's datasheet bandwidth"),
            "fraction",
            0.2,
            1.0,
            0.8,
            "nccl-tests all_reduce busBw on 8 GPUs of one NVLink node: about 80% of the "
            "per-direction NVLink figure",
        ),
        Parameter(
            "inter_link_efficiency",
            N_("NCCL bus bandwidth between nodes over the NIC's line rate"),
            "fraction",
            0.2,
            1.0,
            0.8,
            "nccl-tests across InfiniBand nodes: 80-90% of the NIC's line rate",
        ),
        Parameter(
            "overlap_slowdown",
            N_("compute time lost per second of communication that overlaps it"),
            "fraction",
            0.0,
            1.0,
            0.2,
            "NCCL kernels share SMs and HBM with the compute they overlap (Calculon, SC'23, "
            "Section 4: an overlap derate per collective)",
        ),
        Parameter(
            "dp_overlap",
            N_("share of one micro-batch's compute DP communication can hide behind"),
            "fraction",
            0.0,
            1.0,
            2 / 3,
            "gradients are made in the backward, 2/3 of a micro-batch's compute (Megatron-LM "
            "--overlap-grad-reduce; PyTorch DDP, Li et al. VLDB 2020)",
        ),
        Parameter(
            "logit_bytes",
            N_("bytes per logit element alive at the loss's peak"),
            "B",
            4.0,
            24.0,
            14.0,
            "PyTorch eager cross-entropy on logits cast to fp32: bf16 logits 2 + fp32 copy 4 "
            "+ log-softmax 4 + its gradient 4 (tests/demos/test_loss_peak.py measures it)",
        ),
        Parameter(
            "context_bytes",
            N_("CUDA context, cuBLAS and kernel images on each GPU"),
            "B",
            0.0,
            4e9,
            0.6e9,
            "torch CUDA context on H100: about 0.5-0.6 GB before any tensor (nvidia-smi)",
        ),
        Parameter(
            "nccl_bytes",
            N_("NCCL buffers per communicator this GPU belongs to"),
            "B",
            0.0,
            2e9,
            0.2e9,
            "NCCL_BUFFSIZE 4 MiB per channel and peer, up to 32 channels (NCCL environment "
            "variables documentation)",
        ),
        Parameter(
            "allocator_fraction",
            N_("memory the caching allocator reserves beyond what it hands out"),
            "fraction",
            0.0,
            0.5,
            0.08,
            "PyTorch CUDA caching allocator: blocks rounded and split by size class "
            "(c10/cuda/CUDACachingAllocator.cpp), reserved over allocated",
        ),
    )
}

TIME_PARAMETERS = (
    "gemm_efficiency", "attention_efficiency", "hbm_efficiency", "kernel_overhead_s",
    "microbatch_overhead_s", "step_overhead_s", "intra_link_efficiency",
    "inter_link_efficiency", "overlap_slowdown", "dp_overlap",
)  # fmt: skip
MEMORY_PARAMETERS = ("logit_bytes", "context_bytes", "nccl_bytes", "allocator_fraction")
OPTIONAL_FIELDS = ("gemm_flops", "hbm_bytes_per_s", "held_out_mean_error", "held_out_worst_error")


@dataclass(frozen=True)
class PerformanceProfile:
    """The named parameters of the performance model (PARAMETERS), and where they came from.

    `gemm_flops` and `hbm_bytes_per_s`, when measured (bench/gpu_profile.py), replace the
    accelerator's MAMF ceiling and HBM datasheet figure; the efficiencies then multiply them.
    """

    name: str = "physical defaults"
    source: str = "PARAMETERS' defaults, each cited; fitted to no run"
    gemm_efficiency: float = PARAMETERS["gemm_efficiency"].default
    attention_efficiency: float = PARAMETERS["attention_efficiency"].default
    hbm_efficiency: float = PARAMETERS["hbm_efficiency"].default
    kernel_overhead_s: float = PARAMETERS["kernel_overhead_s"].default
    microbatch_overhead_s: float = PARAMETERS["microbatch_overhead_s"].default
    step_overhead_s: float = PARAMETERS["step_overhead_s"].default
    intra_link_efficiency: float = PARAMETERS["intra_link_efficiency"].default
    inter_link_efficiency: float = PARAMETERS["inter_link_efficiency"].default
    overlap_slowdown: float = PARAMETERS["overlap_slowdown"].default
    dp_overlap: float = PARAMETERS["dp_overlap"].default
    logit_bytes: float = PARAMETERS["logit_bytes"].default
    context_bytes: float = PARAMETERS["context_bytes"].default
    nccl_bytes: float = PARAMETERS["nccl_bytes"].default
    allocator_fraction: float = PARAMETERS["allocator_fraction"].default
    gemm_flops: float | None = None  # measured matmul ceiling, FLOP/s; None: MAMF
    hbm_bytes_per_s: float | None = None  # measured; None: the datasheet's
    # How far off the profile's step times were on runs held out of its fit, one at a time
    # (app.calc.calibration's report): mean and worst |predicted / measured - 1|; None: unknown
    held_out_mean_error: float | None = None
    held_out_worst_error: float | None = None

    def __post_init__(self) -> None:
        problems = out_of_bounds(self)
        if problems:
            raise ValueError(Message.join("; ", problems))

    def values(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in PARAMETERS}

    def with_values(self, **values: float) -> PerformanceProfile:
        return replace(self, **values)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def measured_terms(profile: PerformanceProfile) -> MeasuredTerms:
    """The profile's memory parameters as app.calc.training's measured terms take them."""
    return MeasuredTerms(profile.logit_bytes, profile.nccl_bytes, profile.allocator_fraction)


def out_of_bounds(profile: PerformanceProfile) -> list[Message]:
    """What in `profile` lies outside its parameter's physical bounds, in words."""
    found = []
    for name, p in PARAMETERS.items():
        value = getattr(profile, name)
        if not isinstance(value, int | float) or not math.isfinite(value):
            found.append(Message(N_("%(name)s must be a finite number"), name=name))
        elif not p.low <= value <= p.high:
            template = N_("%(name)s = %(value)s is outside %(low)s to %(high)s (%(meaning)s)")
            found.append(
                Message(template, name=name, value=f"{value:g}", low=f"{p.low:g}",
                        high=f"{p.high:g}", meaning=Message(p.meaning))
            )  # fmt: skip
    for name in OPTIONAL_FIELDS:
        value = getattr(profile, name)
        least = 0.0 if name.startswith("held_out") else math.ulp(0.0)
        if value is not None and (not isinstance(value, int | float) or not value >= least
                                  or not math.isfinite(value)):  # fmt: skip
            found.append(Message(N_("%(name)s must be positive or left out"), name=name))
    return found


def profile_from_dict(data: Mapping[str, Any]) -> PerformanceProfile:
    """A profile from JSON-like data; unknown keys and bad values raise ValueError in words."""
    if not isinstance(data, Mapping):
        raise ValueError("a profile is a JSON object of named parameters")
    known = {f.name for f in fields(PerformanceProfile)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"unknown profile fields: {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("name", "source"):
            values[key] = str(value)
        elif value is None and key in OPTIONAL_FIELDS:
            values[key] = None
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"profile field {key} must be a number, got {value!r}")
        else:
            values[key] = float(value)
    return PerformanceProfile(**values)


def load_profile(text: str) -> PerformanceProfile:
    """A profile from its JSON text (PerformanceProfile.to_json)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the profile is not valid JSON: {error}") from None
    return profile_from_dict(data)


@dataclass(frozen=True)
class Hardware:
    """What a profile's efficiencies multiply: one GPU's matmul ceiling, its dense peak (for
    the attention kernels) and its HBM bandwidth, all as reached in a training step."""

    gemm_flops: float  # large-GEMM throughput, FLOP/s
    attention_flops: float
    hbm_bytes_per_s: float
    kernel_s: float  # fixed cost per kernel


def hardware(
    profile: PerformanceProfile, peak_flops: float, mamf_efficiency: float, hbm_bytes_per_s: float
) -> Hardware:
    ceiling = profile.gemm_flops if profile.gemm_flops is not None else peak_flops * mamf_efficiency
    bandwidth = profile.hbm_bytes_per_s if profile.hbm_bytes_per_s is not None else hbm_bytes_per_s
    return Hardware(
        gemm_flops=ceiling * profile.gemm_efficiency,
        attention_flops=peak_flops * profile.attention_efficiency,
        hbm_bytes_per_s=bandwidth * profile.hbm_efficiency,
        kernel_s=profile.kernel_overhead_s,
    )


def gemm_seconds(m: float, n: float, k: float, hw: Hardware, batch: float = 1.0,
                 value_bytes: float = 2.0) -> float:  # fmt: skip
    """One (batched) GEMM of an m x k by k x n product: the roofline of its FLOPs and of the
    bytes it reads and writes. Its kernel's fixed cost is counted apart (Hardware.kernel_s)."""
    flops = 2.0 * m * n * k * batch
    moved = value_bytes * (m * k + k * n + m * n) * batch
    return max(flops / hw.gemm_flops, moved / hw.hbm_bytes_per_s)
