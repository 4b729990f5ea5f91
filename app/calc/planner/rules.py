"""The rules that make a layout invalid, each with a reason a page can show."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from app.calc.planner.request import (
    PIPELINE_SCHEDULES,
    RECOMPUTE,
    Layout,
    PlanRequest,
    check_request,
)
from app.calc.planner.results import Rejected

# rule -> what it says and where it comes from. Rejected.rule is one of these keys.
RULES: dict[str, str] = {
    "world_size": "dp x tp x pp x cp must equal the number of GPUs (ep is carved out of dp x cp)",
    "tp_within_node": "tp must divide the GPUs per node: TP all-reduces 4 times per layer per "
    "micro-batch and needs NVLink (Narayanan et al. arXiv:2104.04473, takeaway #1)",
    "tp_divides_heads": "tp must divide the attention heads (Megatron splits heads over tp)",
    "tp_divides_kv_heads": "tp must divide the KV heads (Megatron-Core attention.py: "
    "divide(num_query_groups, tp))",
    "pp_divides_layers": "pp must divide the layers (Megatron-LM; allow uneven stages to relax)",
    "cp_divides_seq": "2 x cp must divide the sequence: load-balanced causal CP cuts it into "
    "2 cp chunks (Megatron-Core context_parallel.rst)",
    "sp_divides_tokens": "with sequence parallelism tp must divide the tokens per cp rank",
    "ep_needs_moe": "ep > 1 needs a mixture-of-experts model",
    "ep_divides_experts": "ep must divide the experts",
    "ep_divides_dp_cp": "ep must divide dp x cp: expert parallelism is carved out of the "
    "data-parallel ranks (Megatron-Core expert rank generator)",
    "dp_divides_batch": "dp must divide the global batch in sequences",
    "micro_batch_divides": "the micro-batch must divide each data-parallel replica's sequences",
    "zero_needs_dp": "ZeRO / distributed optimizer with one data-parallel rank (dp x cp = 1) "
    "shards nothing: the same layout as no ZeRO",
    "zero_or_distributed_optimizer": "Megatron's distributed optimizer already shards like "
    "ZeRO-1; pick one",
    "schedule_needs_pp": "a pipeline schedule other than 1F1B needs pp > 1",
    "unknown_schedule": f"the schedule must be one of {', '.join(PIPELINE_SCHEDULES)}",
    "virtual_stages": "interleaved 1F1B needs v >= 2 model chunks per stage; other schedules v = 1",
    "interleaved_divides_layers": "interleaved: pp x v must divide the layers",
    "interleaved_microbatches": "interleaved: micro-batches must be a multiple of pp "
    "(Megatron-LM runs them in groups of p)",
    "zb_microbatches": "ZB-H1: at least pp micro-batches (Qi et al. arXiv:2401.10241 Section 2.1)",
    "selective_same_as_none": "search only: with FlashAttention selective recompute keeps the "
    "same activations as none and adds FLOPs (NVIDIA/Megatron-LM#464)",
    "gpipe_dominated": "search only: GPipe has 1F1B's bubble with m instead of p micro-batches "
    "in flight",
    "out_of_memory": "memory per GPU exceeds the GPU's memory",
}


@dataclass(frozen=True)
class Degrees:
    dp: int
    tp: int
    pp: int
    cp: int
    ep: int
    sp: bool


def degree_rules(req: PlanRequest, d: Degrees) -> Iterator[tuple[str, str]]:
    """Each broken degree-level rule as (rule, reason), in the order the search applies them."""
    cfg, n = req.model, req.cluster
    if d.dp * d.tp * d.pp * d.cp != n.gpus:
        yield "world_size", f"dp*tp*pp*cp = {d.dp * d.tp * d.pp * d.cp}, not {n.gpus} GPUs"
    if n.gpus_per_node % d.tp:
        yield "tp_within_node", f"tp={d.tp} does not divide {n.gpus_per_node} GPUs per node"
    if cfg.heads % d.tp:
        yield "tp_divides_heads", f"tp={d.tp} does not divide {cfg.heads} attention heads"
    if cfg.kv_heads % d.tp:
        yield "tp_divides_kv_heads", f"tp={d.tp} does not divide {cfg.kv_heads} KV heads"
    if d.pp > cfg.layers or (cfg.layers % d.pp and not req.uneven_pipeline):
        yield "pp_divides_layers", f"pp={d.pp} does not divide {cfg.layers} layers"
    if d.cp > 1 and req.seq_len % (2 * d.cp):
        yield "cp_divides_seq", f"2*cp={2 * d.cp} does not divide seq_len={req.seq_len}"
    if d.sp and (req.seq_len // d.cp) % d.tp:
        yield "sp_divides_tokens", f"tp={d.tp} does not divide {req.seq_len // d.cp} tokens"
    if d.ep > 1 and cfg.experts <= 1:
        yield "ep_needs_moe", f"ep={d.ep} on a dense model"
    elif d.ep > 1 and cfg.experts % d.ep:
        yield "ep_divides_experts", f"ep={d.ep} does not divide {cfg.experts} experts"
    if (d.dp * d.cp) % d.ep:
        yield "ep_divides_dp_cp", f"ep={d.ep} does not divide dp*cp={d.dp * d.cp}"
    if req.global_batch_sequences % d.dp:
        yield (
            "dp_divides_batch",
            (f"dp={d.dp} does not divide the {req.global_batch_sequences} sequences per step"),
        )


def knob_rules(req: PlanRequest, lay: Layout) -> Iterator[tuple[str, str]]:
    """Each broken rule about ZeRO, micro-batch and schedule (degrees assumed valid)."""
    per_replica = req.global_batch_sequences // lay.dp
    if lay.zero_stage not in (0, 1, 2, 3):
        raise ValueError("zero_stage must be 0, 1, 2 or 3")
    if lay.recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE)}")
    if lay.micro_batch < 1:
        raise ValueError("micro_batch must be at least 1")
    if lay.distributed_optimizer and lay.zero_stage:
        yield "zero_or_distributed_optimizer", (f"distributed optimizer with ZeRO-{lay.zero_stage}")
    if (lay.zero_stage or lay.distributed_optimizer) and lay.dp * lay.cp == 1:
        yield "zero_needs_dp", "dp*cp = 1: nothing to shard over"
    if per_replica % lay.micro_batch:
        yield (
            "micro_batch_divides",
            (f"b={lay.micro_batch} does not divide {per_replica} sequences per replica"),
        )
        return
    m = per_replica // lay.micro_batch
    if lay.schedule not in PIPELINE_SCHEDULES:
        yield "unknown_schedule", f"schedule {lay.schedule!r}"
        return
    if lay.schedule != "1f1b" and lay.pp == 1:
        yield "schedule_needs_pp", f"{lay.schedule} with pp=1"
    if (lay.schedule == "interleaved") != (lay.virtual_stages >= 2) or lay.virtual_stages < 1:
        yield "virtual_stages", f"{lay.schedule} with v={lay.virtual_stages}"
    if lay.schedule == "interleaved" and lay.pp > 1:
        chunks = lay.pp * lay.virtual_stages
        if chunks > req.model.layers or (req.model.layers % chunks and not req.uneven_pipeline):
            yield (
                "interleaved_divides_layers",
                (f"pp*v={chunks} does not divide {req.model.layers} layers"),
            )
        if m % lay.pp:
            yield "interleaved_microbatches", f"m={m} is not a multiple of pp={lay.pp}"
    if lay.schedule == "zb-h1" and m < lay.pp:
        yield "zb_microbatches", f"m={m} < pp={lay.pp}"


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
