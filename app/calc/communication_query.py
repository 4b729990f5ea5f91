"""The communication calculator's inputs: one flat model shared by the page, the shareable URL,
the JSON API and the command line, and its full answer as plain data."""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.comm import Collective, nccl_tests_source, ring_factor
from app.calc.comm_volume import (
    DTYPE_BYTES,
    STRATEGIES,
    CommCall,
    CommLayout,
    bus_factor,
    latency_steps,
    step_calls,
)
from app.calc.links import LINKS, Link, alpha_beta_time
from app.calc.messages import N_, Message, sentence, words_of
from app.calc.model import PRESETS, count_params
from app.calc.query_config import QUERY_CONFIG

LABELS = {
    "preset": "Model",
    "dp": "Data parallel (DP)",
    "tp": "Tensor parallel (TP)",
    "pp": "Pipeline parallel (PP)",
    "ep": "Expert parallel (EP)",
    "cp": "Context parallel (CP)",
    "zero_stage": "ZeRO stage",
    "sequence_parallel": "Sequence parallel",
    "seq_len": "Sequence length",
    "micro_batch": "Micro-batch size",
    "microbatches": "Micro-batches per step",
    "dtype": "Data type on the wire",
    "dp_link": "DP link",
    "tp_link": "TP link",
    "pp_link": "PP link",
    "ep_link": "EP link",
    "cp_link": "CP link",
    "compute_s": "Compute time per step (s)",
    "collective": "Collective",
    "collective_ranks": "Ranks N",
    "collective_mb": "Size S (MB)",
    "collective_link": "Link",
}

STRATEGY_LABELS = {
    "dp": "Data parallel",
    "tp": "Tensor parallel",
    "pp": "Pipeline parallel",
    "ep": "Expert parallel",
    "cp": "Context parallel",
}

Preset = Literal[tuple(PRESETS)]  # type: ignore[valid-type]
LinkName = Literal[tuple(LINKS)]  # type: ignore[valid-type]
DtypeName = Literal[tuple(DTYPE_BYTES)]  # type: ignore[valid-type]
CollectiveName = Literal[tuple(Collective)]  # type: ignore[valid-type]

# nccl-tests' busbw / algbw for each collective, symbolic (app.calc.comm).
BUS_FACTOR_LATEX = {
    Collective.ALL_REDUCE: r"2\frac{N-1}{N}",
    Collective.REDUCE_SCATTER: r"\frac{N-1}{N}",
    Collective.ALL_GATHER: r"\frac{N-1}{N}",
    Collective.ALL_TO_ALL: r"\frac{N-1}{N}",
    Collective.BROADCAST: "1",
    Collective.REDUCE: "1",
    Collective.GATHER: r"\frac{N-1}{N}",
    Collective.SCATTER: r"\frac{N-1}{N}",
}


def _count(le: int, description: str = "") -> Any:
    return Field(ge=1, le=le, description=description)


class CommunicationQuery(BaseModel):
    """Everything the communication calculator takes."""

    model_config = QUERY_CONFIG

    preset: Preset = Field("llama3-70b", description="A published model.")
    dp: Annotated[int, _count(65_536)] = 4
    tp: Annotated[int, _count(512)] = 8
    pp: Annotated[int, _count(512)] = 2
    ep: Annotated[
        int,
        _count(1024, "divides dp * cp (expert TP = tp, Megatron-Core's default); MoE models only"),
    ] = 1
    cp: Annotated[int, _count(1024)] = 1
    zero_stage: Annotated[int, Field(ge=0, le=3)] = 1
    sequence_parallel: bool = True
    seq_len: Annotated[int, _count(1_048_576)] = 8192
    micro_batch: Annotated[int, _count(4096)] = 1
    microbatches: Annotated[int, _count(65_536, "gradient accumulation steps")] = 8
    dtype: DtypeName = Field("bf16", description="Gradients and activations on the wire.")
    dp_link: LinkName = "ib-ndr"
    tp_link: LinkName = "nvlink4"
    pp_link: LinkName = "ib-ndr"
    ep_link: LinkName = "ib-ndr"
    cp_link: LinkName = "ib-ndr"
    compute_s: Annotated[
        float, Field(gt=0, le=1e6, description="Seconds of compute per step on one GPU.")
    ] = 4.0
    collective: CollectiveName = Field(
        "all_reduce", description="One collective on its own, as nccl-tests times it."
    )
    collective_ranks: Annotated[int, _count(65_536, "N, the ranks of that collective")] = 8
    collective_mb: Annotated[
        float, Field(gt=0, le=1e9, description="S in MB (10^6 B), as nccl-tests sizes it.")
    ] = 1000.0
    collective_link: LinkName = "nvlink4"

    @model_validator(mode="after")
    def _consistent(self) -> CommunicationQuery:
        cfg = PRESETS[self.preset]
        problems: list[str] = []
        if cfg.heads % self.tp:
            template = N_("Tensor parallel (TP) must divide the %(heads)s attention heads")
            problems.append(Message(template, heads=cfg.heads))
        if self.pp > cfg.layers:
            template = N_("Pipeline parallel (PP) cannot exceed the %(layers)s layers")
            problems.append(Message(template, layers=cfg.layers))
        if self.seq_len % self.cp:
            problems.append(Message(N_("Context parallel (CP) must divide the sequence length")))
        if self.ep > 1 and cfg.experts == 1:
            problems.append(Message(N_("Expert parallel (EP) needs a mixture-of-experts model")))
        if not problems:
            # The calculation's own checks become messages here, never a failure later.
            try:
                step_calls(self.layout())
            except ValueError as exc:
                problems.append(sentence(words_of(exc)))
        if problems:
            raise ValueError(Message.join("; ", problems))
        return self

    def layout(self) -> CommLayout:
        return CommLayout(
            model=PRESETS[self.preset], dp=self.dp, tp=self.tp, pp=self.pp, ep=self.ep,
            cp=self.cp, zero_stage=self.zero_stage, sequence_parallel=self.sequence_parallel,
            seq_len=self.seq_len, micro_batch=self.micro_batch, microbatches=self.microbatches,
        )  # fmt: skip

    def link(self, strategy: str) -> Link:
        return LINKS[getattr(self, f"{strategy}_link")]


def _call_row(call: CommCall, link: Link, element_bytes: int) -> dict[str, Any]:
    sent_bytes = call.sent_elements * element_bytes
    payload_bytes = call.payload_elements * element_bytes
    time_per_call = alpha_beta_time(sent_bytes, call.steps, link)
    factor = bus_factor(call.kind, call.ranks)
    algbw = payload_bytes / time_per_call if time_per_call else 0.0
    return {
        "strategy": call.strategy,
        "label": call.label,
        "collective": call.kind,
        "ranks": call.ranks,
        "calls_per_step": call.calls,
        "payload_elements": call.payload_elements,
        "sent_elements_per_call": call.sent_elements,
        "elements_per_step": call.elements_per_step,
        "bytes_per_step": call.elements_per_step * element_bytes,
        "latency_steps_per_call": call.steps,
        "link": link.slug,
        "time_per_call_s": time_per_call,
        "time_s": call.calls * time_per_call,
        "bus_factor": float(factor),
        "algbw_bytes_per_s": algbw,
        "busbw_bytes_per_s": algbw * float(factor),
        "formula": call.formula,
        "substituted": call.substituted,
        "source": call.source,
    }


def collective_row(kind: str, ranks: int, payload_bytes: float, link: Link) -> dict[str, Any]:
    """One collective of S = `payload_bytes` on `ranks` ranks over `link`, timed as the step's
    collectives are: the busiest rank moves factor * S in k steps, t = k alpha + factor S / beta
    (app.calc.links), so busbw = algbw * factor approaches beta as S grows (nccl-tests)."""
    factor = ring_factor(Collective(kind), ranks)
    sent_bytes = float(factor * Fraction(payload_bytes))
    steps = latency_steps(kind, ranks)
    time_s = alpha_beta_time(sent_bytes, steps, link)
    algbw = payload_bytes / time_s if time_s else 0.0
    return {
        "collective": str(kind),
        "ranks": ranks,
        "payload_bytes": payload_bytes,
        "bus_factor": float(factor),
        "bus_factor_latex": BUS_FACTOR_LATEX[Collective(kind)],
        "sent_bytes": sent_bytes,
        "latency_steps": steps,
        "link": link.slug,
        "time_s": time_s,
        "algbw_bytes_per_s": algbw,
        "busbw_bytes_per_s": algbw * float(factor),
        "source": nccl_tests_source(Collective(kind)),
    }


def communication_result(query: CommunicationQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data: what the API returns and `--json` prints."""
    layout = query.layout()
    counts = count_params(layout.model)
    element_bytes = DTYPE_BYTES[query.dtype]
    rows = [_call_row(c, query.link(c.strategy), element_bytes) for c in step_calls(layout)]
    degrees = {"dp": query.dp * query.cp, "tp": query.tp, "pp": query.pp, "ep": query.ep,
               "cp": query.cp}  # fmt: skip
    strategies = []
    for key in STRATEGIES:
        mine = [r for r in rows if r["strategy"] == key]
        strategies.append(
            {
                "strategy": key,
                "label": STRATEGY_LABELS[key],
                "ranks": degrees[key],
                "link": getattr(query, f"{key}_link"),
                "elements_per_step": sum(r["elements_per_step"] for r in mine),
                "bytes_per_step": sum(r["bytes_per_step"] for r in mine),
                "time_s": sum(r["time_s"] for r in mine),
            }
        )
    comm_s = sum(s["time_s"] for s in strategies)
    n_d = query.dp * query.cp
    payload, one_link = query.collective_mb * 1e6, LINKS[query.collective_link]
    return {
        "model": layout.model.name,
        "total_params": counts.total,
        "active_params": counts.active,
        "gpus": layout.world_size,
        "layers_in_stage": layout.layers_in_stage,
        "dtype": query.dtype,
        "bytes_per_element": element_bytes,
        "ring": {
            "ranks": n_d,
            "share": (n_d - 1) / n_d,
            "all_reduce_factor": 2 * (n_d - 1) / n_d,
        },
        "collectives": rows,
        "strategies": strategies,
        "links": {
            key: {
                "slug": link.slug,
                "name": link.name,
                "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s,
                "latency_s": link.latency_s,
                "scope": link.scope,
                "source": link.source,
            }
            for key, link in ((s, query.link(s)) for s in STRATEGIES)
        },
        "bytes_per_step": sum(s["bytes_per_step"] for s in strategies),
        "comm_s": comm_s,
        "compute_s": query.compute_s,
        "step_s_perfect_overlap": max(query.compute_s, comm_s),
        "step_s_no_overlap": query.compute_s + comm_s,
        "collective": collective_row(query.collective, query.collective_ranks, payload, one_link),
        "all_collectives": [
            collective_row(kind, query.collective_ranks, payload, one_link) for kind in Collective
        ],
    }
