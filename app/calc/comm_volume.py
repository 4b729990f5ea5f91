r"""Communication volume per GPU per training step, for each kind of parallelism.

One module because it is one table: the formulas below, per strategy, written once as closed
forms and once as the calls one step makes, each beside its source.

Volumes count the elements one GPU *sends* (a ring sends and receives the same amount at the
same time), for one optimizer step of m micro-batches of b sequences of s tokens. Ring
factors are app.calc.comm's: all-reduce 2(N-1)/N, reduce-scatter, all-gather and all-to-all
(N-1)/N of the payload S (nccl-tests doc/PERFORMANCE.md). Symbols: Psi parameters, L_s the
layers of this pipeline stage (ceil(L/p)), h hidden, t tp, p pp, c cp, e ep, k top-k.

- Data parallel over N_d = dp * cp ranks (cp ranks hold the same weights; Megatron reduces
  over the data-parallel group with context parallelism): DDP ring all-reduce 2(N-1)/N * Psi;
  ZeRO-1/2 reduce-scatter of the gradients plus all-gather of the updated weights,
  (N-1)/N * Psi each, the same 2(N-1)/N * Psi; ZeRO-3 also all-gathers the weights in every
  forward and every backward, 3(N-1)/N * Psi (Rajbhandari et al., ZeRO, arXiv:1910.02054,
  Section 7.1 and 7.2: 2 Psi, 2 Psi and 3 Psi = 1.5x), all for one micro-batch. With m
  micro-batches see zero_elements: ZeRO-2 and ZeRO-3 reduce every micro-batch's gradients.
  Expert weights reduce over N_e = dp * cp / ep ranks.
- Tensor parallel: two all-reduces of b*s*h in the forward pass (after attention and after
  the MLP, the g operator) and two in the backward pass (the f operator) per layer
  (Shoeybi et al., Megatron-LM, arXiv:1909.08053, Section 3 and Figure 4). With sequence
  parallelism each all-reduce becomes a reduce-scatter plus an all-gather of the same total
  volume (Korthikanti et al., arXiv:2205.05198, Section 4.2.2).
- Pipeline parallel: per micro-batch one activation b*s*h forward and its gradient backward
  across each stage boundary; each of the t ranks of a stage sends b*s*h/t (Narayanan et al.,
  arXiv:2104.04473, Section 4.1, scatter/gather). Counted for a stage inside the pipeline (one
  boundary each side); the first and last stages send half.
- Expert parallel: per MoE layer an all-to-all dispatch and an all-to-all combine in the
  forward pass and their two transposes in the backward pass; each carries top_k copies of
  this GPU's tokens of h values, of which (e-1)/e leave the GPU under uniform routing
  (Lepikhin et al., GShard, arXiv:2006.16668, Section 2.2; Fedus et al., Switch Transformer,
  arXiv:2101.03961, Section 2).
- Context parallel (ring attention): the forward pass passes each rank's K and V blocks
  around the ring of c ranks (an all-gather done as c-1 point-to-point steps); the backward
  pass gathers K and V again and passes their gradients back (a reduce-scatter) (Megatron-Core
  context-parallel docs, docs/source/api-guide/context_parallel.rst; Liu et al., Ring
  Attention, arXiv:2310.01889, Section 3). K and V are b * (s/c) * kv_heads * head_dim each,
  with the kv heads split over tp (at least one per rank).

Not counted: embedding and loss all-reduces of vocab-parallel layers, the tied-embedding
all-reduce between first and last pipeline stages, recomputation's repeated forward
collectives, and the latency of DP gradient buckets (one collective of the whole buffer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

from app.calc.comm import Collective, ring_factor
from app.calc.messages import N_, Message
from app.calc.model import ModelConfig, attention_params_per_tp_rank, count_params

DTYPE_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
SEND = "send"  # a point-to-point send: nccl-tests' sendrecv, busbw = algbw

ZERO_SOURCE = "Rajbhandari et al., ZeRO, arXiv:1910.02054"
RING_SOURCE = "ring factors: nccl-tests doc/PERFORMANCE.md (Patarasuk & Yuan 2009)"
TP_SOURCE = "Shoeybi et al., Megatron-LM, arXiv:1909.08053, Section 3, Figure 4"
SP_SOURCE = "Korthikanti et al., arXiv:2205.05198, Section 4.2.2"
PP_SOURCE = "Narayanan et al., arXiv:2104.04473, Section 4.1 (scatter/gather)"
EP_SOURCE = "Lepikhin et al., GShard, arXiv:2006.16668, Section 2.2; Switch, arXiv:2101.03961"
CP_SOURCE = (
    "Megatron-Core docs, api-guide/context_parallel.rst; Liu et al., Ring Attention, "
    "arXiv:2310.01889"
)

STRATEGIES = ("dp", "tp", "pp", "ep", "cp")


def bus_factor(kind: str, ranks: int) -> Fraction:
    """busbw / algbw as nccl-tests defines it; also the share of S each rank sends."""
    if kind == SEND:
        return Fraction(1)
    return ring_factor(Collective(kind), ranks)


def latency_steps(kind: str, ranks: int) -> int:
    """Sequential steps, each paying the link's latency once: a ring all-reduce takes
    2(N-1), reduce-scatter, all-gather and (pairwise) all-to-all N-1, a send one."""
    if ranks < 1:
        raise ValueError("ranks must be at least 1")
    if kind == SEND:
        return 1
    if ranks == 1:
        return 0
    return 2 * (ranks - 1) if kind == Collective.ALL_REDUCE else ranks - 1


def ddp_elements(params: float, ranks: int) -> float:
    """Gradient elements one GPU sends per step in a ring all-reduce: 2(N-1)/N * Psi."""
    return float(ring_factor(Collective.ALL_REDUCE, ranks) * Fraction(params))


def zero_elements(params: float, ranks: int, stage: int, microbatches: int = 1) -> float:
    """Elements one GPU sends per step of m micro-batches under ZeRO stage 0-3.

    ZeRO paper Section 7 gives one micro-batch: 2(N-1)/N * Psi for stages 0-2, 3(N-1)/N * Psi
    for stage 3. With gradient accumulation, stages 0 and 1 keep whole gradients and reduce
    once per step (DDP under no_sync), but stages 2 and 3 keep only their gradient shard, so
    each micro-batch's gradients are reduce-scattered as they are produced (DeepSpeed's
    stage 2/3 reduce in every backward; its pipeline engine refuses ZeRO-2 for this reason),
    and stage 3 also gathers the weights again for every micro-batch's forward and backward:
    stage 2 sends (m + 1)(N-1)/N * Psi, stage 3 3m(N-1)/N * Psi.
    """
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {stage}")
    if microbatches < 1:
        raise ValueError("microbatches must be at least 1")
    share = ring_factor(Collective.ALL_GATHER, ranks) * Fraction(params)
    passes = {0: 2, 1: 2, 2: microbatches + 1, 3: 3 * microbatches}[stage]
    return float(passes * share)


def tp_layer_elements(micro_batch: int, seq: int, hidden: int, tp: int) -> float:
    """TP elements one GPU sends per layer per micro-batch: 4 all-reduces of b*s*h,
    4 * 2(t-1)/t * b*s*h (Megatron-LM Figure 4); the same with sequence parallelism."""
    payload = Fraction(micro_batch * seq * hidden)
    return float(4 * ring_factor(Collective.ALL_REDUCE, tp) * payload)


def pp_elements(micro_batch: int, seq: int, hidden: int, microbatches: int, tp: int = 1) -> float:
    """PP elements one GPU inside the pipeline sends per step: 2m * b*s*h / t."""
    return float(Fraction(2 * microbatches * micro_batch * seq * hidden, tp))


def ep_layer_elements(top_k: int, tokens: int, hidden: int, ep: int) -> float:
    """EP elements one GPU sends per MoE layer per micro-batch: 4 * (e-1)/e * k * tokens * h."""
    return float(4 * ring_factor(Collective.ALL_TO_ALL, ep) * (top_k * tokens * hidden))


def cp_layer_elements(micro_batch: int, seq_local: int, kv_width: int, cp: int) -> float:
    """CP elements one GPU sends per layer per micro-batch: 3 ring passes (K,V forward; K,V
    and dK,dV backward) of (c-1) blocks of 2 * b * (s/c) * kv_width."""
    if cp < 1:
        raise ValueError("cp must be at least 1")
    return float(3 * (cp - 1) * 2 * micro_batch * seq_local * kv_width)


@dataclass(frozen=True)
class CommLayout:
    """A model, its parallel layout and its batch: what the communication depends on."""

    model: ModelConfig
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    zero_stage: int = 0
    sequence_parallel: bool = False
    seq_len: int = 4096
    micro_batch: int = 1
    microbatches: int = 1  # per step per pipeline (gradient accumulation)

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def layers_in_stage(self) -> int:
        return math.ceil(self.model.layers / self.pp)

    @property
    def seq_local(self) -> int:
        """Tokens of one sequence on one cp rank: s / c."""
        return self.seq_len // self.cp


@dataclass(frozen=True)
class CommCall:
    """One collective (or send) of a strategy, and how often a step runs it on one GPU."""

    strategy: str  # one of STRATEGIES
    label: str
    kind: str  # a Collective value, or SEND
    ranks: int
    calls: int  # per step
    payload_elements: float  # S of one call, as nccl-tests sizes it
    sent_elements: float  # sent by one GPU in one call
    steps: int  # sequential latency steps of one call
    formula: str  # LaTeX: elements per GPU per step, symbolic
    # Writes `substituted` when it is read: the planner times thousands of layouts and shows
    # none of their formulas
    render: Callable[[], str] = field(repr=False, compare=False)
    source: str

    @property
    def substituted(self) -> str:
        """LaTeX: the formula with this layout's numbers."""
        return self.render()

    @property
    def elements_per_step(self) -> float:
        return self.calls * self.sent_elements


def _tex(value: float) -> str:
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.6g}"
    exponent = math.floor(math.log10(abs(value)))
    return f"{value / 10**exponent:.4g} \\times 10^{{{exponent}}}"


def _validate(layout: CommLayout) -> None:
    cfg = layout.model
    count_params(cfg)  # the model's own checks
    for name in ("dp", "tp", "pp", "ep", "cp", "seq_len", "micro_batch", "microbatches"):
        if getattr(layout, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(layout, name)}")
    if layout.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {layout.zero_stage}")
    if cfg.heads % layout.tp:
        template = N_("tp (%(tp)s) must divide the %(heads)s attention heads")
        raise ValueError(Message(template, tp=layout.tp, heads=cfg.heads))
    if layout.pp > cfg.layers:
        template = N_("pp (%(pp)s) cannot exceed the %(layers)s layers")
        raise ValueError(Message(template, pp=layout.pp, layers=cfg.layers))
    if layout.seq_len % layout.cp:
        template = N_("cp (%(cp)s) must divide the sequence length (%(seq_len)s)")
        raise ValueError(Message(template, cp=layout.cp, seq_len=layout.seq_len))
    if layout.sequence_parallel and layout.seq_local % layout.tp:
        template = N_(
            "sequence parallelism needs tp (%(tp)s) to divide the tokens per cp rank (%(tokens)s)"
        )
        raise ValueError(Message(template, tp=layout.tp, tokens=layout.seq_local))
    if layout.ep > 1:
        if cfg.experts <= 1:
            raise ValueError(Message(N_("ep > 1 needs a mixture-of-experts model")))
        if cfg.experts % layout.ep:
            template = N_("ep (%(ep)s) must divide the %(experts)s experts")
            raise ValueError(Message(template, ep=layout.ep, experts=cfg.experts))
        if (layout.dp * layout.cp) % layout.ep:
            template = N_(
                "ep (%(ep)s) must divide dp * cp (%(dp_cp)s) while the expert "
                "tensor-parallel size equals tp, Megatron-Core's default, which these "
                "calculators keep"
            )
            raise ValueError(Message(template, ep=layout.ep, dp_cp=layout.dp * layout.cp))


BUCKET_SOURCE = (
    "Megatron-Core, megatron/core/distributed/distributed_data_parallel_config.py, "
    "bucket_size: unless set, max(40,000,000, 1,000,000 x DP size) parameters per bucket "
    "(larger DP sizes need larger buckets so that collectives stay bandwidth-bound)"
)


def bucket_elements(ranks: int) -> int:
    """Gradients per data-parallel bucket: the unit a framework reduces as the backward
    produces it, so the last bucket's collective runs after the backward has ended."""
    return max(40_000_000, 1_000_000 * ranks)


def stage_params(layout: CommLayout) -> tuple[float, float]:
    """(dense, expert) parameters on a first-stage GPU, the ones its DP group reduces.

    The same split as app.calc.training: tp divides attention, MLP, shared experts, embedding
    and output projection; ep * tp divides routed experts; norms and router are replicated;
    the first stage holds the embedding and, when pp = 1, the output projection.
    """
    cfg = layout.model
    counts = count_params(cfg)
    t = layout.tp
    dense_layer = (
        attention_params_per_tp_rank(cfg, t)
        + (counts.mlp + counts.shared_experts) / t
        + (counts.router + counts.norms)
    )
    embedding = counts.embedding / t + counts.positions
    output = counts.lm_head / t + counts.final_norm if layout.pp == 1 else 0.0
    dense = layout.layers_in_stage * dense_layer + embedding + output
    expert = layout.layers_in_stage * counts.experts / (layout.ep * t)
    return dense, expert


def _dp_substituted(coef: str, n: int, params: float, total: float) -> str:
    times = f"{coef} \\cdot " if coef else ""
    return f"{times}\\frac{{{n - 1}}}{{{n}}} \\cdot {_tex(params)} = {_tex(total)}"


def _dp_calls(layout: CommLayout) -> list[CommCall]:
    dense, expert = stage_params(layout)
    n_d = layout.dp * layout.cp
    groups = [("", r"\Psi", "N_d", dense, n_d)]
    if expert:
        groups.append(("expert ", r"\Psi_e", "N_e", expert, n_d // layout.ep))
    m, stage = layout.microbatches, layout.zero_stage
    calls = []
    for prefix, psi, n_sym, params, n in groups:
        if n == 1:
            continue
        share = f"\\frac{{{n_sym}-1}}{{{n_sym}}}"
        if stage == 0:
            plan = [("gradient all-reduce", Collective.ALL_REDUCE, 1, "2", "2")]
        elif stage == 1:
            plan = [
                ("gradient reduce-scatter", Collective.REDUCE_SCATTER, 1, "", ""),
                ("updated-weight all-gather", Collective.ALL_GATHER, 1, "", ""),
            ]
        elif stage == 2:
            # Only a shard of the gradients is kept, so every micro-batch is reduced.
            plan = [
                ("gradient reduce-scatter, every micro-batch", Collective.REDUCE_SCATTER, m,
                 "m", str(m)),
                ("updated-weight all-gather", Collective.ALL_GATHER, 1, "", ""),
            ]  # fmt: skip
        else:
            plan = [
                ("weight all-gather, forward", Collective.ALL_GATHER, m, "m", str(m)),
                ("weight all-gather, backward", Collective.ALL_GATHER, m, "m", str(m)),
                ("gradient reduce-scatter, every micro-batch", Collective.REDUCE_SCATTER, m,
                 "m", str(m)),
            ]  # fmt: skip
        section = "7.1" if stage == 0 else ("7.2.1" if stage < 3 else "7.2.2")
        for label, kind, count, coef, coef_num in plan:
            sent = float(ring_factor(kind, n)) * params
            calls.append(
                CommCall(
                    strategy="dp",
                    label=f"{prefix}{label}".capitalize(),
                    kind=kind.value,
                    ranks=n,
                    calls=count,
                    payload_elements=params,
                    sent_elements=sent,
                    steps=latency_steps(kind, n),
                    formula=f"{coef}{share}{psi}",
                    render=partial(_dp_substituted, coef_num, n, params, count * sent),
                    source=f"{ZERO_SOURCE}, Section {section}; {RING_SOURCE}",
                )
            )
    return calls


def _tp_substituted(dims: str, factor: str, t: int, bsh: str, total: float) -> str:
    return f"4 \\cdot {dims}{factor}\\frac{{{t - 1}}}{{{t}}} \\cdot {bsh} = {_tex(total)}"


def _tp_calls(layout: CommLayout) -> list[CommCall]:
    t = layout.tp
    if t == 1:
        return []
    cfg, m, b, s_c = layout.model, layout.microbatches, layout.micro_batch, layout.seq_local
    payload = b * s_c * cfg.hidden
    count = 4 * layout.layers_in_stage * m
    dims = f"{layout.layers_in_stage} \\cdot {m} \\cdot "
    bsh = f"{b} \\cdot {s_c} \\cdot {cfg.hidden}"
    if not layout.sequence_parallel:
        sent = float(ring_factor(Collective.ALL_REDUCE, t)) * payload
        return [
            CommCall(
                "tp", "All-reduce (2 forward + 2 backward per layer)", Collective.ALL_REDUCE.value,
                t, count, payload, sent, latency_steps(Collective.ALL_REDUCE, t),
                r"4 L_s m \cdot 2\frac{t-1}{t}\, b \tfrac{s}{c} h",
                partial(_tp_substituted, dims, "2", t, bsh, count * sent),
                f"{TP_SOURCE}; {RING_SOURCE}",
            )
        ]  # fmt: skip
    calls = []
    for kind, label in (
        (Collective.ALL_GATHER, "All-gather (SP: 2 forward + 2 backward per layer)"),
        (Collective.REDUCE_SCATTER, "Reduce-scatter (SP: 2 forward + 2 backward per layer)"),
    ):
        sent = float(ring_factor(kind, t)) * payload
        calls.append(
            CommCall(
                "tp", label, kind.value, t, count, payload, sent, latency_steps(kind, t),
                r"4 L_s m \cdot \frac{t-1}{t}\, b \tfrac{s}{c} h",
                partial(_tp_substituted, dims, "", t, bsh, count * sent),
                f"{SP_SOURCE}; {TP_SOURCE}",
            )
        )  # fmt: skip
    return calls


def _pp_calls(layout: CommLayout) -> list[CommCall]:
    if layout.pp == 1:
        return []
    cfg, m, b, s_c, t = (layout.model, layout.microbatches, layout.micro_batch,
                         layout.seq_local, layout.tp)  # fmt: skip
    sent = b * s_c * cfg.hidden / t
    return [
        CommCall(
            "pp", label, SEND, 2, m, sent, sent, 1,
            r"m \cdot \frac{b \tfrac{s}{c} h}{t}",
            lambda: (
                f"{m} \\cdot \\frac{{{b} \\cdot {s_c} \\cdot {cfg.hidden}}}{{{t}}} "
                f"= {_tex(m * sent)}"
            ),
            PP_SOURCE,
        )
        for label in ("Send activations (forward)", "Send activation gradients (backward)")
    ]  # fmt: skip


def _ep_calls(layout: CommLayout) -> list[CommCall]:
    e = layout.ep
    if e == 1:
        return []
    cfg, m = layout.model, layout.microbatches
    # The tokens this GPU holds when the MoE layer starts (split over tp with SP).
    tokens = layout.micro_batch * layout.seq_local // (layout.tp if layout.sequence_parallel else 1)
    payload = cfg.top_k * tokens * cfg.hidden
    sent = float(ring_factor(Collective.ALL_TO_ALL, e)) * payload
    count = 4 * layout.layers_in_stage * m
    return [
        CommCall(
            "ep", "All-to-all (dispatch + combine, forward and backward)",
            Collective.ALL_TO_ALL.value, e, count, payload, sent,
            latency_steps(Collective.ALL_TO_ALL, e),
            r"4 L_s m \cdot \frac{e-1}{e}\, k \, n_{\text{tok}} h",
            lambda: f"4 \\cdot {layout.layers_in_stage} \\cdot {m} \\cdot \\frac{{{e - 1}}}{{{e}}} "
            f"\\cdot {cfg.top_k} \\cdot {tokens} \\cdot {cfg.hidden} = {_tex(count * sent)}",
            f"{EP_SOURCE}; {RING_SOURCE}",
        )
    ]  # fmt: skip


def kv_width(layout: CommLayout) -> int:
    """K (or V) values per token on one tp rank: kv_heads / t heads (at least 1) x head_dim."""
    cfg = layout.model
    return max(cfg.kv_heads // layout.tp, 1) * cfg.dim_per_head


def _cp_substituted(
    passes: int, lst: int, m: int, c: int, b: int, s_c: int, width: int, total: float
) -> str:
    return (
        f"{passes} \\cdot {lst} \\cdot {m} \\cdot {c - 1} \\cdot 2 \\cdot {b} \\cdot "
        f"{s_c} \\cdot {width} = {_tex(total)}"
    )


def _cp_calls(layout: CommLayout) -> list[CommCall]:
    c = layout.cp
    if c == 1:
        return []
    m, b, s_c, lst = (
        layout.microbatches,
        layout.micro_batch,
        layout.seq_local,
        layout.layers_in_stage,
    )
    width = kv_width(layout)
    block = 2 * b * s_c * width  # K and V of this rank
    payload = c * block
    calls = []
    for kind, label, passes in (
        (Collective.ALL_GATHER, "K,V ring pass (forward, and again in backward)", 2),
        (Collective.REDUCE_SCATTER, "dK,dV ring pass (backward)", 1),
    ):
        count = passes * lst * m
        sent = float(ring_factor(kind, c)) * payload
        calls.append(
            CommCall(
                "cp", label, kind.value, c, count, payload, sent, latency_steps(kind, c),
                f"{passes} L_s m \\cdot (c-1) \\cdot 2 b \\tfrac{{s}}{{c}} d_{{kv}}",
                partial(_cp_substituted, passes, lst, m, c, b, s_c, width, count * sent),
                CP_SOURCE,
            )
        )  # fmt: skip
    return calls


def strategy_calls(layout: CommLayout, strategies: tuple[str, ...]) -> list[CommCall]:
    """step_calls' collectives of `strategies` alone, in step_calls' order (the planner times
    each strategy with what it depends on)."""
    _validate(layout)
    makers = {"dp": _dp_calls, "tp": _tp_calls, "pp": _pp_calls, "ep": _ep_calls,
              "cp": _cp_calls}  # fmt: skip
    return [call for name, make in makers.items() if name in strategies for call in make(layout)]


def step_calls(layout: CommLayout) -> list[CommCall]:
    """Every collective one GPU takes part in during one training step (module docstring)."""
    _validate(layout)
    return [
        *_dp_calls(layout),
        *_tp_calls(layout),
        *_pp_calls(layout),
        *_ep_calls(layout),
        *_cp_calls(layout),
    ]
