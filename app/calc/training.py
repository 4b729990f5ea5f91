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
  (Megatron's default expert-tensor-parallel size is tp). Expert parallelism is carved out
  of the data-parallel ranks: ep must divide dp * cp, and the expert data-parallel degree
  is N_e = dp * cp / ep.
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

Measured (setup.measured, the performance profile's memory parameters, app.calc.performance):
three more terms, beside the textbook ones, for what a GPU reports. On the stage that holds
the loss (pp = 1 here) the loss's temporaries beyond the fp32 logits the activations count:
(logit_bytes - 4) per logit element, 14 - 4 for PyTorch's cross-entropy on fp32 logits
(tests/demos/test_loss_peak.py); NCCL's buffers, nccl_bytes per communicator (one per
parallel group of more than one GPU, two for the pipeline's neighbours), with the overhead
then standing for the CUDA context alone; and the caching allocator's reserve over all that
it hands out, allocator_fraction of the other terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from app.calc.activations import (
    LOGITS_BYTES,
    ActivationSetup,
    in_flight_microbatches,
    layer_activations,
    stage_activations,
)
from app.calc.messages import N_, Message
from app.calc.model import ModelConfig, ParamCount, count_params
from app.calc.precision import BytesPerParam, bytes_per_param
from app.calc.sharding import ddp_bucket_bytes
from app.calc.units import GB, MIB

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
class Parallelism:
    """Degrees of parallelism and memory-saving switches. See the module docstring."""

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
    overhead_bytes: float = 2e9  # CUDA context + NCCL buffers (module docstring)
    # None: the textbook terms alone; else the terms a GPU reports beyond them (module
    # docstring, "Measured")
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


def _validate(setup: TrainingSetup) -> None:
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


def _tex(x: float) -> str:
    """A number for LaTeX: integers below 10^5 as they are, the rest as m x 10^e."""
    if x == int(x) and abs(x) < 1e5:
        return str(int(x))
    if x == 0:
        return "0"
    exp = math.floor(math.log10(abs(x)))
    if -3 <= exp < 5:
        return f"{x:.4g}"
    return rf"{x / 10**exp:.4g}\times10^{{{exp}}}"


def _gb(x: float) -> str:
    return rf"{x / GB:.2f}\ \text{{GB}}"


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
        b = _tex(bytes_each)
        if shards.expert:
            numbers = (
                rf"{b}\times\left(\frac{{{_tex(shards.dense)}}}{{{n_d}}}"
                rf" + \frac{{{_tex(shards.expert)}}}{{{n_e}}}\right)"
            )
        elif sharded:
            numbers = rf"\frac{{{b}\times{_tex(shards.dense)}}}{{{n_d}}}"
        else:
            numbers = rf"{b}\times{_tex(shards.dense)}"
        return f"{numbers} = {_gb(value)}"

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
    _validate(setup)
    cfg, p = setup.model, setup.parallel
    counts = count_params(cfg)
    bpp = bytes_per_param(setup.recipe, setup.optimizer)
    layers_in_stage = math.ceil(cfg.layers / p.pp)
    last_stage = p.pp == 1

    dense_layer = (
        (counts.attention + counts.mlp + counts.shared_experts) / p.tp
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
            bpp.weights,
            p.zero_stage >= 3,
            p.offload_params,
            shards,
            f"{bpp.weights_source}; {ZERO_SOURCE} (stage 3 shards); {stage_src}",
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
            render=lambda: f"{_tex(setup.overhead_bytes)} = {_gb(setup.overhead_bytes)}",
            source="Ultra-Scale Playbook, 'Memory usage in Transformers' (CUDA context "
            "1-2 GB); ~0.5 GB per NCCL communicator; an editable estimate",
        )
    )
    if setup.measured is not None:
        terms += _measured_terms(setup, cfg, terms, last_stage)
    return MemoryReport(
        setup=setup,
        params=counts,
        params_on_gpu=shards.dense + shards.expert,
        layers_in_stage=layers_in_stage,
        in_flight=in_flight,
        terms=terms,
    )


def communicators(dp: int, tp: int, pp: int, cp: int, ep: int) -> int:
    """NCCL communicators one GPU belongs to: one per parallel group of more than one GPU (the
    ZeRO group is dp * cp), two for the pipeline's sends to the previous and the next stage."""
    return sum(1 for k in (tp, cp, ep, dp * cp) if k > 1) + 2 * (pp > 1)


def loss_extra_bytes(tokens: float, vocab: int, tp: int, logit_bytes: float) -> float:
    """The loss's temporaries beyond the fp32 logits app.calc.activations counts, for `tokens`
    on one GPU with the vocabulary split over tp (module docstring, "Measured")."""
    return (logit_bytes - LOGITS_BYTES) * (tokens * vocab / tp)


def _measured_terms(
    setup: TrainingSetup, cfg: ModelConfig, terms: list[Term], last_stage: bool
) -> list[Term]:
    """The terms a GPU reports beyond the textbook ones (module docstring, "Measured")."""
    extra, p, act = setup.measured, setup.parallel, setup.activations
    assert extra is not None
    found = []
    source = "app.calc.performance (the default profile's value unless a profile says)"
    if last_stage:
        logits = act.seq_len / p.cp * act.micro_batch * cfg.vocab / p.tp
        loss = loss_extra_bytes(act.seq_len / p.cp * act.micro_batch, cfg.vocab, p.tp,
                                extra.logit_bytes)  # fmt: skip
        found.append(
            Term(
                key="loss", label="Loss temporaries beyond the fp32 logits", gpu_bytes=loss,
                cpu_bytes=0.0, formula=r"(b_{\text{logit}} - 4)\,\frac{s\,b\,V}{c\,t}",
                render=lambda: (
                    rf"({_tex(extra.logit_bytes)} - 4)\times{_tex(logits)} = {_gb(loss)}"
                ),
                source="PyTorch cross-entropy on fp32 logits: bf16 logits, log-softmax, its "
                "gradient and nll's, 14 bytes per logit at the peak (tests/demos/"
                f"test_loss_peak.py); {source}",
            )
        )  # fmt: skip
    groups = communicators(p.dp, p.tp, p.pp, p.cp, p.ep)
    nccl = extra.nccl_bytes * groups
    found.append(
        Term(
            key="nccl", label="NCCL buffers", gpu_bytes=nccl, cpu_bytes=0.0,
            formula=r"n_{\text{comm}}\,M_{\text{NCCL}}",
            render=lambda: rf"{groups}\times{_tex(extra.nccl_bytes)} = {_gb(nccl)}",
            source="one communicator per parallel group of more than one GPU, two for the "
            f"pipeline's neighbours; NCCL_BUFFSIZE per channel and peer; {source}",
        )
    )  # fmt: skip
    allocated = sum(t.gpu_bytes for t in terms) + sum(t.gpu_bytes for t in found)
    reserve = extra.allocator_fraction * allocated
    found.append(
        Term(
            key="allocator", label="Reserved by the caching allocator", gpu_bytes=reserve,
            cpu_bytes=0.0, formula=r"f_{\text{alloc}}\,M_{\text{allocated}}",
            render=lambda: (
                rf"{_tex(extra.allocator_fraction)}\times{_tex(allocated)} = {_gb(reserve)}"
            ),
            source="PyTorch's CUDA caching allocator rounds and splits blocks by size class "
            f"(c10/cuda/CUDACachingAllocator.cpp): reserved over allocated; {source}",
        )
    )  # fmt: skip
    return found


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
            rf"{layers_in_stage}\times{_tex(in_flight)}\times{_tex(per_layer)}"
            rf" + {_tex(stage.embedding)} + {_tex(stage.output)} = {_gb(stage.total)}"
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
            lambda: rf"{k}\times{_tex(largest_layer)}\times{_tex(gathered_bytes_each)}",
            "DeepSpeed estimate_zero3_model_states_mem_needs: 4 * largest_layer_params "
            "(deepspeed/runtime/zero/stage3.py)",
        )
    if p.zero_stage == 2:
        return _buffers(
            "Gradient bucket", setup.bucket_mb * MIB, r"B_{\text{bucket}}",
            lambda: rf"{_tex(setup.bucket_mb)}\ \text{{MiB}}",
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
        r"b_g\,\Psi", lambda: rf"{_tex(bpp.grads)}\times{_tex(elements)}",
        "torch DDP's default, gradient_as_bucket_view=False: every gradient is copied into a "
        "flat bucket built with the model and kept for its lifetime "
        "(torch/nn/parallel/distributed.py; measured by the ZeRO demo)",
    )  # fmt: skip


def _buffers(
    label: str, value: float, formula: str, substituted: Callable[[], str], source: str
) -> Term:
    """A buffer term: on the GPU only, its substitution ending in its value."""
    return Term(key="buffers", label=label, gpu_bytes=value, cpu_bytes=0.0, formula=formula,
                render=lambda: f"{substituted()} = {_gb(value)}", source=source)  # fmt: skip


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
