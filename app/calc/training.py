r"""Training memory of the most loaded GPU, term by term, in bytes on the GPU and the CPU.

Conventions (each one a choice; all of them are what the report shows the user):

Which GPU. The first pipeline stage: under 1F1B and GPipe it keeps the most micro-batches
in flight, and it holds the embedding. Layers are split ceil(L/pp) to the first stage. The
embedding (and learned positions) sit on the first stage, the final norm and output
projection on the last; with pp = 1 the one stage holds both. With tied embeddings and
pp > 1 the last stage keeps its own copy of the embedding (Megatron-LM), which is not on
the first stage.

What each degree divides (Megatron-LM, Shoeybi et al. arXiv:1909.08053 Section 3;
Narayanan et al. arXiv:2104.04473):
- tp divides the attention and MLP matrices (and their biases), shared experts, the token
  embedding and the output projection (vocab-parallel). Norms, the router and learned
  position embeddings are replicated on every tp rank; they are tiny, and keeping them whole
  keeps the arithmetic simple.
- pp divides the layers, as above.
- ep divides the routed experts of every MoE layer; each expert is also split over tp
  (Megatron's default expert-tensor-parallel size is tp). Megatron-Core gives the MoE layers
  a grid of their own, etp x ep x edp x pp over the same ranks ("MoE parallel folding",
  parallel_state.py at main@d98e8a64); with its default etp = tp, which this calculator
  keeps, ep must divide dp * cp and the expert data-parallel degree is N_e = dp * cp / ep.
- cp splits the sequence. cp ranks hold identical weights, so the gradients are reduced and
  ZeRO shards over N_d = dp * cp (Megatron shards its distributed optimizer over the
  data-parallel group with context parallelism). world_size = dp * tp * pp * cp.

ZeRO (Rajbhandari et al. arXiv:1910.02054, Section 5) shards this GPU's parameters over
N_d (expert parameters over N_e): stage 1 the master weights and optimizer states, stage 2
also the gradients, stage 3 also the weights. Megatron's distributed optimizer shards the
same states as stage 1. With mixed-precision Adam and tp = pp = 1 the four model-state
terms add up to app.calc.memory.model_states_per_gpu exactly.

Offload (Ren et al., ZeRO-Offload, arXiv:2101.06840; Rajbhandari et al., ZeRO-Infinity,
arXiv:2104.07857): offload_optimizer moves this rank's shard of the master weights and
optimizer states (and the update that uses them) to CPU memory; offload_params (ZeRO-3
only) moves this rank's shard of the 16-bit weights there. Each moved term keeps its size
and changes side; with ZeRO stage 2 or 3 the gradient shard goes to the CPU as well, since
the optimizer that consumes it runs there. (DeepSpeed also keeps fp32 gradient copies on
the CPU; not counted.)

Buffers. With more than one data-parallel rank, DDP and ZeRO-1 reduce the full gradients
through buckets. When the gradients are views into those buckets (Megatron-LM's contiguous
gradient buffer; torch DDP with gradient_as_bucket_view=True) the buckets cost nothing beyond
the gradient term; torch DDP's default (grad_bucket_copy) keeps the buckets beside the
gradients, a second copy of this GPU's gradients, Psi * b_g (app.calc.sharding, measured by
the ZeRO demo). An earlier version counted one 25 MiB bucket here, which matches neither.
ZeRO-2 reduce-scatters each bucket as it fills and keeps only its shard: one bucket of
bucket_mb MiB is counted. ZeRO-3 gathers the parameters of zero3_prefetch_layers of the
largest layer ahead and holds their full gradients before the reduce-scatter:
prefetch * largest_layer * (b_w + b_g), which for 16-bit weights and gradients and one
layer is DeepSpeed's 4 * largest_layer_params (estimate_zero3_model_states_mem_needs).
"Layer" is one transformer block on this GPU, or the embedding or output projection shard if larger.

Activations come from app.calc.activations (Korthikanti et al. arXiv:2205.05198): the
stage's layers times the micro-batches in flight for the schedule, plus the embedding and,
on the last stage, the output layer. The setup's tp and cp replace those in the
ActivationSetup, so the two cannot disagree.

Overhead is one explicit number, 2 GB by default: CUDA context and kernels 1-2 GB
(Ultra-Scale Playbook, "Memory usage in Transformers"), NCCL buffers ~0.5 GB per
communicator; the anchors disagree (ShardLab research notes Section 3.7).

Measured (setup.measured): three more terms, beside the textbook ones, for what a GPU
reports: the loss's temporaries, NCCL's buffers and the caching allocator's reserve
(app.calc.training_measured).

The setup and the report are app.calc.training_types; this module computes the terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from app.calc.activations import (
    ActivationSetup,
    in_flight_microbatches,
    layer_activations,
    stage_activations,
)
from app.calc.model import ModelConfig, attention_params_per_tp_rank, count_params
from app.calc.precision import BytesPerParam, bytes_per_param
from app.calc.sharding import ddp_bucket_bytes
from app.calc.training_measured import measured_terms

# app/calculators and app/quiz import the setup and the report from here: MODEL_STATE_KEYS and
# Parallelism, unused here, are re-exported for them.
from app.calc.training_types import MODEL_STATE_KEYS as MODEL_STATE_KEYS
from app.calc.training_types import (
    MemoryReport,
    Term,
    TrainingSetup,
    Verdict,
    tex,
    tex_gb,
    validate_setup,
)
from app.calc.training_types import Parallelism as Parallelism
from app.calc.units import MIB

MAX_MICRO_BATCH = 4096

ZERO_SOURCE = "Rajbhandari et al., ZeRO (arXiv:1910.02054), Section 5.1"
SHARDING_SOURCE = (
    "Megatron-LM: tp splits attention/MLP and the vocab (arXiv:1909.08053 Section 3), "
    "pp splits layers (arXiv:2104.04473)"
)
OFFLOAD_GRADS_SOURCE = (
    "with optimizer offload the gradient shard lives in CPU memory (Ren et al., ZeRO-Offload, "
    "arXiv:2101.06840, Section 4; DeepSpeed estimate_zero2_model_states_mem_needs)"
)


@dataclass(frozen=True)
class _Shards:
    """This GPU's dense and expert parameters, and the ZeRO degrees for each."""

    dense: float
    expert: float
    n_dense: int
    n_expert: int


def _state_term(
    key: str,
    label: str,
    symbol: str,
    bytes_each: float,
    sharded: bool,
    on_cpu: bool,
    shards: _Shards,
    source: str,
) -> Term:
    n_d = shards.n_dense if sharded else 1
    n_e = shards.n_expert if sharded else 1
    value = bytes_each * (shards.dense / n_d + shards.expert / n_e)
    if shards.expert:
        formula = rf"{symbol}\left(\frac{{\Psi_d}}{{N_d}} + \frac{{\Psi_e}}{{N_e}}\right)"
    else:
        formula = rf"\frac{{{symbol}\,\Psi}}{{N_d}}" if sharded else rf"{symbol}\,\Psi"

    def substituted() -> str:
        b = tex(bytes_each)
        if shards.expert:
            numbers = (
                rf"{b}\times\left(\frac{{{tex(shards.dense)}}}{{{n_d}}}"
                rf" + \frac{{{tex(shards.expert)}}}{{{n_e}}}\right)"
            )
        elif sharded:
            numbers = rf"\frac{{{b}\times{tex(shards.dense)}}}{{{n_d}}}"
        else:
            numbers = rf"{b}\times{tex(shards.dense)}"
        return f"{numbers} = {tex_gb(value)}"

    where = " (CPU)" if on_cpu else ""
    return Term(
        key=key,
        label=label + where,
        gpu_bytes=0.0 if on_cpu else value,
        cpu_bytes=value if on_cpu else 0.0,
        formula=formula,
        render=substituted,
        source=source,
    )


def training_memory(setup: TrainingSetup) -> MemoryReport:
    """Every memory term of the first pipeline stage's GPU (module docstring)."""
    validate_setup(setup)
    cfg, p = setup.model, setup.parallel
    counts = count_params(cfg)
    bpp = bytes_per_param(setup.recipe, setup.optimizer)
    layers_in_stage = math.ceil(cfg.layers / p.pp)
    last_stage = p.pp == 1

    dense_layer = (
        attention_params_per_tp_rank(cfg, p.tp)
        + (counts.mlp + counts.shared_experts) / p.tp
        + counts.router
        + counts.norms
    )
    expert_layer = counts.experts / (p.ep * p.tp)
    embedding = counts.embedding / p.tp + counts.positions
    output = counts.lm_head / p.tp + counts.final_norm if last_stage else 0.0
    shards = _Shards(
        dense=layers_in_stage * dense_layer + embedding + output,
        expert=layers_in_stage * expert_layer,
        n_dense=p.dense_shard_ways,
        n_expert=p.expert_shard_ways,
    )
    stage_src = f"{SHARDING_SOURCE}; Psi = this GPU's parameters before ZeRO"
    opt_sharded = p.zero_stage >= 1 or p.distributed_optimizer
    terms = [
        _state_term(
            "weights",
            "Weights",
            "b_w",
            bpp.weights_on_gpu,
            p.zero_stage >= 3,
            p.offload_params,
            shards,
            f"{bpp.weights_source}"
            + (
                f"; + {bpp.fp8_copies:g} B FP8 copies: {bpp.fp8_copies_source}"
                if bpp.fp8_copies
                else ""
            )
            + f"; {ZERO_SOURCE} (stage 3 shards); {stage_src}",
        ),
        _state_term(
            "grads",
            "Gradients",
            "b_g",
            bpp.grads,
            p.zero_stage >= 2,
            # ZeRO-Offload streams each partitioned gradient to the CPU, where the optimizer
            # that consumes it runs (DeepSpeed's ZeRO-2 estimate with offload: 2 Psi on GPU).
            p.offload_optimizer and p.zero_stage >= 2,
            shards,
            f"{bpp.grads_source}; {ZERO_SOURCE} (stage 2 shards); {OFFLOAD_GRADS_SOURCE}",
        ),
        _state_term(
            "master",
            "Master weights",
            "b_m",
            bpp.master,
            opt_sharded,
            p.offload_optimizer,
            shards,
            f"{bpp.master_source}; {ZERO_SOURCE} (stage 1 shards)",
        ),
        _state_term(
            "optimizer",
            "Optimizer states",
            "b_o",
            bpp.optimizer,
            opt_sharded,
            p.offload_optimizer,
            shards,
            f"{bpp.optimizer_source}; {ZERO_SOURCE} (stage 1 shards)",
        ),
    ]

    # Activations are kept in the precision the forward runs in: the weights' (Korthikanti
    # et al. count 2 bytes for 16-bit training; fp32 training keeps 4).
    act_setup = replace(
        setup.activations, tp=p.tp, cp=p.cp, bytes_per_value=max(2, int(bpp.weights))
    )
    in_flight = in_flight_microbatches(
        setup.schedule, p.pp, setup.microbatches, setup.virtual_stages
    )
    terms.append(_activation_term(cfg, act_setup, layers_in_stage, in_flight, last_stage))

    largest_layer = max(dense_layer + expert_layer, embedding, output)
    terms.append(_buffer_term(setup, bpp, shards, largest_layer))
    terms.append(
        Term(
            key="overhead",
            label="CUDA context, NCCL and allocator overhead",
            gpu_bytes=setup.overhead_bytes,
            cpu_bytes=0.0,
            formula=r"M_{\text{overhead}}",
            render=lambda: f"{tex(setup.overhead_bytes)} = {tex_gb(setup.overhead_bytes)}",
            source="Ultra-Scale Playbook, 'Memory usage in Transformers' (CUDA context "
            "1-2 GB); ~0.5 GB per NCCL communicator; an editable estimate",
        )
    )
    if setup.measured is not None:
        terms += measured_terms(setup, cfg, terms, last_stage)
    return MemoryReport(
        setup=setup,
        params=counts,
        params_on_gpu=shards.dense + shards.expert,
        layers_in_stage=layers_in_stage,
        in_flight=in_flight,
        terms=terms,
    )


def _activation_term(
    cfg: ModelConfig,
    act_setup: ActivationSetup,
    layers_in_stage: int,
    in_flight: float,
    last_stage: bool,
) -> Term:
    stage = stage_activations(
        cfg, act_setup, layers_in_stage, in_flight, first_stage=True, last_stage=last_stage
    )
    per_layer = layer_activations(cfg, act_setup).total
    return Term(
        key="activations",
        label="Activations",
        gpu_bytes=stage.total,
        cpu_bytes=0.0,
        formula=r"L_{\text{stage}}\, m_{\text{flight}}\, A_{\text{layer}}"
        r" + A_{\text{emb}} + A_{\text{out}}",
        render=lambda: (
            rf"{layers_in_stage}\times{tex(in_flight)}\times{tex(per_layer)}"
            rf" + {tex(stage.embedding)} + {tex(stage.output)} = {tex_gb(stage.total)}"
        ),
        source="Korthikanti et al., Reducing Activation Recomputation (arXiv:2205.05198), "
        "Table 2 and Section 4.2.3 (pipeline stages); app.calc.activations",
    )


def _buffer_term(
    setup: TrainingSetup, bpp: BytesPerParam, shards: _Shards, largest_layer: float
) -> Term:
    p = setup.parallel
    if p.dense_shard_ways == 1:
        return _buffers(
            "Communication buffers", 0.0, "0", lambda: r"0\ (N_d = 1)",
            "No data-parallel peers: no gradient buckets or gathers",
        )  # fmt: skip
    if p.zero_stage == 3:
        k = setup.zero3_prefetch_layers
        gathered_bytes_each = bpp.weights + bpp.grads
        return _buffers(
            "ZeRO-3 gathered parameters and gradients",
            k * largest_layer * gathered_bytes_each,
            r"k\,\Psi_{\text{largest layer}}\,(b_w + b_g)",
            lambda: rf"{k}\times{tex(largest_layer)}\times{tex(gathered_bytes_each)}",
            "DeepSpeed estimate_zero3_model_states_mem_needs: 4 * largest_layer_params "
            "(deepspeed/runtime/zero/stage3.py)",
        )
    if p.zero_stage == 2:
        return _buffers(
            "Gradient bucket", setup.bucket_mb * MIB, r"B_{\text{bucket}}",
            lambda: rf"{tex(setup.bucket_mb)}\ \text{{MiB}}",
            "one reduce bucket of the size given; torch.nn.parallel."
            "DistributedDataParallel bucket_cap_mb (default 25 MiB)",
        )  # fmt: skip
    # DDP and ZeRO-1: the full gradients again, or nothing (module docstring).
    if not setup.grad_bucket_copy:
        return _buffers(
            "Gradient buckets (views of the gradients)", 0.0, "0", lambda: "0",
            "gradients are views into the all-reduce buckets: Megatron-LM's contiguous "
            "gradient buffer, or torch DDP with gradient_as_bucket_view=True (its docstring: "
            "'the saved memory size will be equal to the total gradients size')",
        )  # fmt: skip
    elements = shards.dense + shards.expert
    return _buffers(
        "Gradient buckets (a copy of the gradients)", ddp_bucket_bytes(elements, bpp.grads),
        r"b_g\,\Psi", lambda: rf"{tex(bpp.grads)}\times{tex(elements)}",
        "torch DDP's default, gradient_as_bucket_view=False: every gradient is copied into a "
        "flat bucket built with the model and kept for its lifetime "
        "(torch/nn/parallel/distributed.py; measured by the ZeRO demo)",
    )  # fmt: skip


def _buffers(
    label: str, value: float, formula: str, substituted: Callable[[], str], source: str
) -> Term:
    """A buffer term: on the GPU only, its substitution ending in its value."""
    return Term(key="buffers", label=label, gpu_bytes=value, cpu_bytes=0.0, formula=formula,
                render=lambda: f"{substituted()} = {tex_gb(value)}", source=source)  # fmt: skip


def verdict(setup: TrainingSetup, gpu_memory_bytes: float) -> Verdict:
    """Whether the setup fits, by how much, and the largest micro-batch that would.

    Every term is non-decreasing in the micro-batch, so a binary search finds the largest
    one in 1..MAX_MICRO_BATCH that fits.
    """

    def gpu_bytes(micro_batch: int) -> float:
        acts = replace(setup.activations, micro_batch=micro_batch)
        return training_memory(replace(setup, activations=acts)).gpu_bytes

    used = training_memory(setup).gpu_bytes
    lo, hi = 0, MAX_MICRO_BATCH  # lo fits (0 trivially), answer in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if gpu_bytes(mid) <= gpu_memory_bytes:
            lo = mid
        else:
            hi = mid - 1
    return Verdict(
        fits=used <= gpu_memory_bytes,
        headroom_bytes=gpu_memory_bytes - used,
        largest_micro_batch=lo,
    )


def memory_vs_dp(setup: TrainingSetup, dp_values: list[int]) -> list[tuple[int, float]]:
    """GPU bytes of the same setup at each data-parallel degree (for a chart).

    Degrees the setup cannot use (ep must divide dp * cp) are left out of the points.
    """
    points = []
    for dp in dp_values:
        parallel = replace(setup.parallel, dp=dp)
        if dp < 1 or (dp * parallel.cp) % parallel.ep:
            continue
        points.append((dp, training_memory(replace(setup, parallel=parallel)).gpu_bytes))
    return points
