"""The rules that make a layout invalid, each with a reason a page can show."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from app.calc.messages import N_, Message
from app.calc.planner.request import (
    PIPELINE_SCHEDULES,
    RECOMPUTE,
    Layout,
    PlanRequest,
    check_request,
)
from app.calc.planner.results import Rejected

# rule -> what it says and where it comes from. Rejected.rule is one of these keys.
RULES: dict[str, Message] = {
    "world_size": Message(
        N_(
            "dp x tp x pp x cp must equal the number of GPUs (the MoE layers' ep folds into "
            "the same ranks)"
        )
    ),
    "tp_within_node": Message(
        N_(
            "tp must divide the GPUs per node: TP all-reduces 4 times per layer per "
            "micro-batch and needs NVLink (Narayanan et al. arXiv:2104.04473, takeaway #1)"
        )
    ),
    "tp_divides_heads": Message(
        N_("tp must divide the attention heads (Megatron splits heads over tp)")
    ),
    "tp_divides_kv_heads": Message(
        N_(
            "tp and the KV heads must divide one another (Megatron-Core: the query groups are "
            "a multiple or a divisor of tp; with more tp ranks than KV heads each rank keeps "
            "a replica of one)"
        )
    ),
    "pp_divides_layers": Message(
        N_("pp must divide the layers (Megatron-LM; allow uneven stages to relax)")
    ),
    "cp_divides_seq": Message(
        N_(
            "2 x cp must divide the sequence: load-balanced causal CP cuts it into "
            "2 cp chunks (Megatron-Core context_parallel.rst)"
        )
    ),
    "sp_divides_tokens": Message(
        N_("with sequence parallelism tp must divide the tokens per cp rank")
    ),
    "ep_needs_moe": Message(N_("ep > 1 needs a mixture-of-experts model")),
    "ep_divides_experts": Message(N_("ep must divide the experts")),
    "ep_divides_dp_cp": Message(
        N_(
            "ep must divide dp x cp while the expert tensor-parallel size equals tp, "
            "Megatron-Core's default (its MoE parallel folding allows a larger ep with a "
            "smaller expert tensor-parallel size, which the planner does not search)"
        )
    ),
    "fused_softmax": Message(
        N_(
            "(heads / tp) x micro-batch must be a multiple of 4 for the fused scale-mask-softmax "
            "kernel, which the run requires (Megatron-DeepSpeed initialize.py, "
            "--abort-on-unmet-fused-kernel-constraints)"
        )
    ),
    "dp_divides_batch": Message(N_("dp must divide the global batch in sequences")),
    "micro_batch_divides": Message(
        N_("the micro-batch must divide each data-parallel replica's sequences")
    ),
    "zero_needs_dp": Message(
        N_(
            "ZeRO / distributed optimizer with one data-parallel rank (dp x cp = 1) "
            "shards nothing: the same layout as no ZeRO"
        )
    ),
    "zero_or_distributed_optimizer": Message(
        N_("Megatron's distributed optimizer already shards like ZeRO-1; pick one")
    ),
    "schedule_needs_pp": Message(N_("a pipeline schedule other than 1F1B needs pp > 1")),
    "unknown_schedule": Message(
        N_("the schedule must be one of %(schedules)s"), schedules=", ".join(PIPELINE_SCHEDULES)
    ),
    "virtual_stages": Message(
        N_("interleaved 1F1B needs v >= 2 model chunks per stage; other schedules v = 1")
    ),
    "interleaved_divides_layers": Message(N_("interleaved: pp x v must divide the layers")),
    "interleaved_microbatches": Message(
        N_(
            "interleaved: micro-batches must be a multiple of pp, as with Megatron-Core's "
            "default group of pp micro-batches per virtual stage (a larger "
            "--microbatch-group-size-per-virtual-pipeline-stage admits any count >= pp, a "
            "schedule the planner does not model)"
        )
    ),
    "zb_microbatches": Message(
        N_("ZB-H1: at least pp micro-batches (Qi et al. arXiv:2401.10241 Section 2.1)")
    ),
    "selective_same_as_none": Message(
        N_(
            "search only: with FlashAttention selective recompute keeps the "
            "same activations as none and adds FLOPs (NVIDIA/Megatron-LM#464)"
        )
    ),
    "gpipe_dominated": Message(
        N_("search only: GPipe has 1F1B's bubble with m instead of p micro-batches in flight")
    ),
    "out_of_memory": Message(N_("memory per GPU exceeds the GPU's memory")),
    "not_offered": Message(
        N_(
            "the request's framework does not offer it (sequence or context parallelism, a ZeRO "
            "stage)"
        )
    ),
}


@dataclass(frozen=True)
class Degrees:
    dp: int
    tp: int
    pp: int
    cp: int
    ep: int
    sp: bool


def degree_rules(req: PlanRequest, d: Degrees) -> Iterator[tuple[str, Message]]:
    """Each broken degree-level rule as (rule, reason), in the order the search applies them."""
    cfg, n = req.model, req.cluster
    if d.dp * d.tp * d.pp * d.cp != n.gpus:
        template = N_("dp*tp*pp*cp = %(product)s, not %(gpus)s GPUs")
        yield "world_size", Message(template, product=d.dp * d.tp * d.pp * d.cp, gpus=n.gpus)
    if n.gpus_per_node % d.tp:
        template = N_("tp=%(tp)s does not divide %(per_node)s GPUs per node")
        yield "tp_within_node", Message(template, tp=d.tp, per_node=n.gpus_per_node)
    if cfg.heads % d.tp:
        template = N_("tp=%(tp)s does not divide %(heads)s attention heads")
        yield "tp_divides_heads", Message(template, tp=d.tp, heads=cfg.heads)
    if cfg.kv_heads % d.tp and d.tp % cfg.kv_heads:
        template = N_("tp=%(tp)s and %(kv_heads)s KV heads do not divide one another")
        yield "tp_divides_kv_heads", Message(template, tp=d.tp, kv_heads=cfg.kv_heads)
    if d.pp > cfg.layers or (cfg.layers % d.pp and not req.uneven_pipeline):
        template = N_("pp=%(pp)s does not divide %(layers)s layers")
        yield "pp_divides_layers", Message(template, pp=d.pp, layers=cfg.layers)
    if d.cp > 1 and not req.context_parallel:
        yield "not_offered", Message(N_("cp=%(cp)s: no context parallelism"), cp=d.cp)
    if d.sp and d.tp > 1 and not req.sequence_parallel:
        yield "not_offered", Message(N_("sequence parallelism with tp=%(tp)s"), tp=d.tp)
    if d.cp > 1 and req.seq_len % (2 * d.cp):
        template = N_("2*cp=%(two_cp)s does not divide seq_len=%(seq_len)s")
        yield "cp_divides_seq", Message(template, two_cp=2 * d.cp, seq_len=req.seq_len)
    if d.sp and (req.seq_len // d.cp) % d.tp:
        template = N_("tp=%(tp)s does not divide %(tokens)s tokens")
        yield "sp_divides_tokens", Message(template, tp=d.tp, tokens=req.seq_len // d.cp)
    if d.ep > 1 and cfg.experts <= 1:
        yield "ep_needs_moe", Message(N_("ep=%(ep)s on a dense model"), ep=d.ep)
    elif d.ep > 1 and cfg.experts % d.ep:
        template = N_("ep=%(ep)s does not divide %(experts)s experts")
        yield "ep_divides_experts", Message(template, ep=d.ep, experts=cfg.experts)
    if (d.dp * d.cp) % d.ep:
        template = N_("ep=%(ep)s does not divide dp*cp=%(dp_cp)s")
        yield "ep_divides_dp_cp", Message(template, ep=d.ep, dp_cp=d.dp * d.cp)
    if req.global_batch_sequences % d.dp:
        template = N_("dp=%(dp)s does not divide the %(sequences)s sequences per step")
        sequences = req.global_batch_sequences
        yield "dp_divides_batch", Message(template, dp=d.dp, sequences=sequences)


def knob_rules(req: PlanRequest, lay: Layout) -> Iterator[tuple[str, Message]]:
    """Each broken rule about ZeRO, micro-batch and schedule (degrees assumed valid)."""
    per_replica = req.global_batch_sequences // lay.dp
    if lay.zero_stage not in (0, 1, 2, 3):
        raise ValueError("zero_stage must be 0, 1, 2 or 3")
    if lay.recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}")
    if lay.micro_batch < 1:
        raise ValueError("micro_batch must be at least 1")
    if (lay.zero_stage, lay.distributed_optimizer) not in req.zero_options:
        zero = "distributed optimizer" if lay.distributed_optimizer else f"ZeRO-{lay.zero_stage}"
        yield "not_offered", Message(N_("%(zero)s is not offered"), zero=zero)
    if lay.distributed_optimizer and lay.zero_stage:
        template = N_("distributed optimizer with ZeRO-%(stage)s")
        yield "zero_or_distributed_optimizer", Message(template, stage=lay.zero_stage)
    if (lay.zero_stage or lay.distributed_optimizer) and lay.dp * lay.cp == 1:
        yield "zero_needs_dp", Message(N_("dp*cp = 1: nothing to shard over"))
    if per_replica % lay.micro_batch:
        template = N_("b=%(b)s does not divide %(sequences)s sequences per replica")
        yield "micro_batch_divides", Message(template, b=lay.micro_batch, sequences=per_replica)
        return
    attention_batches = req.model.heads // lay.tp * lay.micro_batch
    if req.fused_softmax_required and not req.flash_attention and attention_batches % 4:
        template = N_("(heads / tp) x b = %(batches)s, not a multiple of 4")
        yield "fused_softmax", Message(template, batches=attention_batches)
    m = per_replica // lay.micro_batch
    if lay.schedule not in PIPELINE_SCHEDULES:
        template = N_("schedule %(schedule)s")
        yield "unknown_schedule", Message(template, schedule=repr(lay.schedule))
        return
    if lay.schedule != "1f1b" and lay.pp == 1:
        yield "schedule_needs_pp", Message(N_("%(schedule)s with pp=1"), schedule=lay.schedule)
    if (lay.schedule == "interleaved") != (lay.virtual_stages >= 2) or lay.virtual_stages < 1:
        template = N_("%(schedule)s with v=%(v)s")
        yield "virtual_stages", Message(template, schedule=lay.schedule, v=lay.virtual_stages)
    if lay.schedule == "interleaved" and lay.pp > 1:
        chunks = lay.pp * lay.virtual_stages
        if chunks > req.model.layers or (req.model.layers % chunks and not req.uneven_pipeline):
            template = N_("pp*v=%(chunks)s does not divide %(layers)s layers")
            yield (
                "interleaved_divides_layers",
                Message(template, chunks=chunks, layers=req.model.layers),
            )
        if m % lay.pp:
            template = N_("m=%(m)s is not a multiple of pp=%(pp)s")
            yield "interleaved_microbatches", Message(template, m=m, pp=lay.pp)
    if lay.schedule == "zb-h1" and m < lay.pp:
        # No words to translate: the same in every language, so not marked.
        yield "zb_microbatches", Message("m=%(m)s < pp=%(pp)s", m=m, pp=lay.pp)


def violations(request: PlanRequest, layout: Layout) -> tuple[Rejected, ...]:
    """Every rule `layout` breaks under `request` (empty: it is a valid layout)."""
    check_request(request)
    found = [Rejected(layout, r, why) for r, why in degree_rules(request, degrees_of(layout))]
    if not found:
        found = [Rejected(layout, r, why) for r, why in knob_rules(request, layout)]
    return tuple(found)


def degrees_of(layout: Layout) -> Degrees:
    for name in ("dp", "tp", "pp", "cp", "ep"):
        if getattr(layout, name) < 1:
            raise ValueError(f"{name} must be at least 1")
    return Degrees(layout.dp, layout.tp, layout.pp, layout.cp, layout.ep, layout.sp)
