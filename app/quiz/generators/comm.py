"""Generated questions on communication: ring collectives (app.calc.comm), per-layer and
per-step volumes (app.calc.comm_volume) and alpha-beta times over links (app.calc.links).

Choices hold numbers only, so named inputs are drawn as indices into the tuples below
(`collective`, `link`, `preset`, `strategy`); a quiz file says in a comment what each index is.
The per-step questions ask the communication calculator itself (`communication_result`), so
they are graded by what the page at /calculators/communication shows; inputs a question does
not draw take that calculator's defaults (app.calc.communication_query.CommunicationQuery).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor
from app.calc.comm_volume import (
    DTYPE_BYTES,
    STRATEGIES,
    latency_steps,
    tp_layer_elements,
)
from app.calc.communication_query import (
    BUS_FACTOR_LATEX,
    CommunicationQuery,
    communication_result,
)
from app.calc.links import LINKS, alpha_beta_time
from app.calc.model import PRESETS, count_params
from app.formatting import count_short, latex_number
from app.i18n import N_, gettext, translate
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import STRATEGY_WORDS, ZERO_STAGE_WORDS, link_name, say

# Index tables for drawn inputs.
COLLECTIVE_ORDER: tuple[Collective, ...] = tuple(Collective)
# 0 all_reduce, 1 reduce_scatter, 2 all_gather, 3 all_to_all, 4 broadcast, 5 reduce, 6 gather,
# 7 scatter
LINK_ORDER: tuple[str, ...] = tuple(LINKS)
# 0 nvlink4, 1 nvlink3, 2 pcie5, 3 pcie4, 4 ib-ndr, 5 ib-hdr, 6 roce-400g
PRESET_ORDER: tuple[str, ...] = tuple(PRESETS)
# 0 gpt3-175b, 1 gpt2-xl, 2 llama2-7b, 3 llama2-13b, 4 llama2-70b, 5 llama3-8b,
# 6 llama3-70b, 7 llama3-405b, 8 mistral-7b, 9 mixtral-8x7b, 10 qwen2-72b
STRATEGY_ORDER: tuple[str, ...] = STRATEGIES  # 0 dp, 1 tp, 2 pp, 3 ep, 4 cp

# Collective names read the same in every language (Chinese engineers say all-reduce too).
COLLECTIVE_NAMES = {
    Collective.ALL_REDUCE: "all-reduce",
    Collective.REDUCE_SCATTER: "reduce-scatter",
    Collective.ALL_GATHER: "all-gather",
    Collective.ALL_TO_ALL: "all-to-all",
    Collective.BROADCAST: "broadcast",
    Collective.REDUCE: "reduce",
    Collective.GATHER: "gather",
    Collective.SCATTER: "scatter",
}
# What the payload S is for each collective (app.calc.comm's module docstring).
PAYLOAD_MEANING = {
    Collective.ALL_REDUCE: N_("each rank's buffer to be summed"),
    Collective.REDUCE_SCATTER: N_("each rank's full input, before it is scattered"),
    Collective.ALL_GATHER: N_("the full gathered output"),
    Collective.ALL_TO_ALL: N_("each rank's whole send buffer"),
    Collective.BROADCAST: N_("the root's buffer"),
    Collective.REDUCE: N_("each rank's buffer, summed onto the root"),
    Collective.GATHER: N_("the root's full gathered output"),
    Collective.SCATTER: N_("the root's full buffer, before it is scattered"),
}
RING_FACTOR_LATEX = BUS_FACTOR_LATEX
OVERLAP_NAMES = (N_("perfect overlap"), N_("no overlap"))
# "{sequence_parallel} sequence parallelism": the word before it.
SEQUENCE_PARALLEL_WORDS = {True: N_("with"), False: N_("without")}


def tex(value: float) -> str:
    # Five digits, so that whole numbers below 10^5 print in full.
    return latex_number(value, digits=5)


def _collective(inputs: Mapping[str, float]) -> Collective:
    return COLLECTIVE_ORDER[int(inputs.get("collective", 0))]


def _ring_steps(kind: Collective, payload_bytes: float, ranks: int) -> list[str]:
    factor = ring_factor(kind, ranks)
    sent = ring_bytes_per_rank(kind, int(payload_bytes), ranks)
    return [
        rf"V_\text{{rank}} = {RING_FACTOR_LATEX[kind]}\, S",
        rf"V_\text{{rank}} = {tex(float(factor))} \times {tex(payload_bytes)}\ \text{{B}} = "
        rf"{tex(sent)}\ \text{{B}}",
    ]


def ring_gb_per_rank(inputs: Mapping[str, float]) -> Solution:
    """GB one rank sends in one ring collective of `payload_gb` GB on `ranks` ranks."""
    kind, ranks = _collective(inputs), int(inputs["ranks"])
    payload = float(inputs["payload_gb"]) * 1e9
    return Solution(
        answer=ring_bytes_per_rank(kind, int(payload), ranks) / 1e9,
        prompt_fields={
            "collective": COLLECTIVE_NAMES[kind],
            "payload": f"{float(inputs['payload_gb']):g} GB",
            "payload_meaning": gettext(PAYLOAD_MEANING[kind]),
            "ranks": str(ranks),
        },
        steps_latex=_ring_steps(kind, payload, ranks),
    )


def ring_time_ms(inputs: Mapping[str, float]) -> Solution:
    """Milliseconds for one ring collective in the alpha-beta model: k alpha + V / beta."""
    kind, ranks = _collective(inputs), int(inputs["ranks"])
    link = LINKS[LINK_ORDER[int(inputs["link"])]]
    payload = float(inputs["payload_mb"]) * 1e6
    sent = ring_bytes_per_rank(kind, int(payload), ranks)
    steps = latency_steps(kind, ranks)
    seconds = alpha_beta_time(sent, steps, link)
    return Solution(
        answer=seconds * 1e3,
        prompt_fields={
            "collective": COLLECTIVE_NAMES[kind],
            "payload": f"{float(inputs['payload_mb']):g} MB",
            "payload_meaning": gettext(PAYLOAD_MEANING[kind]),
            "ranks": str(ranks),
            "link": link_name(link),
            "bandwidth": f"{link.bandwidth_bytes_per_s / 1e9:g} GB/s",
            "latency": f"{link.latency_s * 1e6:g} µs",
            "latency_steps": str(steps),
        },
        steps_latex=[
            *_ring_steps(kind, payload, ranks),
            r"t = k\,\alpha + \frac{V_\text{rank}}{\beta}",
            rf"t = {steps} \times {link.latency_s * 1e6:g}\,\mu s + "
            rf"\frac{{{tex(sent)}\,\text{{B}}}}{{{link.bandwidth_bytes_per_s / 1e9:g}\,"
            rf"\text{{GB/s}}}} = {tex(seconds * 1e3)}\ \text{{ms}}",
        ],
    )


def tp_layer_mb(inputs: Mapping[str, float]) -> Solution:
    """MB (bf16) one GPU sends for tensor parallelism in one layer and one micro-batch."""
    b, s, h, t = (int(inputs[k]) for k in ("micro_batch", "seq_len", "hidden", "tp"))
    elements = tp_layer_elements(b, s, h, t)
    width = DTYPE_BYTES["bf16"]
    elements_word = gettext("elements")
    return Solution(
        answer=elements * width / 1e6,
        prompt_fields={
            "micro_batch": str(b),
            "seq_len": f"{s:,}",
            "hidden": f"{h:,}",
            "tp": str(t),
        },
        steps_latex=[
            rf"V = 4 \cdot 2\frac{{t-1}}{{t}}\, b s h \ \text{{{elements_word}}} \times 2\ "
            r"\text{B (bf16)}",
            rf"V = 4 \cdot 2\frac{{{t - 1}}}{{{t}}} \cdot {b} \cdot {s} \cdot {h} \times {width}"
            rf" = {tex(elements * width)}\ \text{{B}}",
        ],
    )


def _query(inputs: Mapping[str, float]) -> CommunicationQuery:
    fields: dict[str, Any] = {}
    if "preset" in inputs:
        fields["preset"] = PRESET_ORDER[int(inputs["preset"])]
    for name in ("dp", "tp", "pp", "ep", "cp", "zero_stage", "seq_len", "micro_batch",
                 "microbatches"):  # fmt: skip
        if name in inputs:
            fields[name] = int(inputs[name])
    if "sequence_parallel" in inputs:
        fields["sequence_parallel"] = bool(inputs["sequence_parallel"])
    for strategy in STRATEGIES:
        if f"{strategy}_link" in inputs:
            fields[f"{strategy}_link"] = LINK_ORDER[int(inputs[f"{strategy}_link"])]
    if "compute_s" in inputs:
        fields["compute_s"] = float(inputs["compute_s"])
    return CommunicationQuery(**fields)


def _layout_fields(query: CommunicationQuery, result: dict[str, Any]) -> dict[str, str]:
    cfg = PRESETS[query.preset]
    counts = count_params(cfg)
    return {
        "model": cfg.name,
        "params": count_short(counts.total),
        "active_params": count_short(counts.active),
        "layers": str(cfg.layers),
        "layers_in_stage": str(result["layers_in_stage"]),
        "hidden": f"{cfg.hidden:,}",
        "heads": str(cfg.heads),
        "kv_heads": str(cfg.kv_heads),
        "head_dim": str(cfg.dim_per_head),
        "experts": str(cfg.experts),
        "top_k": str(cfg.top_k),
        "gpus": f"{result['gpus']:,}",
        "dp": str(query.dp),
        "tp": str(query.tp),
        "pp": str(query.pp),
        "ep": str(query.ep),
        "cp": str(query.cp),
        "zero_stage": say(ZERO_STAGE_WORDS, query.zero_stage),
        "sequence_parallel": gettext(SEQUENCE_PARALLEL_WORDS[query.sequence_parallel]),
        "seq_len": f"{query.seq_len:,}",
        "micro_batch": str(query.micro_batch),
        "microbatches": str(query.microbatches),
        "compute_s": f"{query.compute_s:g}",
        **{f"{s}_link": link_name(LINKS[getattr(query, f"{s}_link")]) for s in STRATEGIES},
    }


def _row_steps(rows: list[dict[str, Any]], element_bytes: int) -> list[str]:
    """The calculator's own formulas per collective, symbolic then substituted (elements)."""
    steps, elements, bytes_ = [], gettext("elements"), gettext("bytes")
    for row in rows:
        # The collective's label as the communication page says it, in the request's language.
        steps.append(rf"\text{{{translate(row['label'])}}}:\ {row['formula']}")
        steps.append(row["substituted"] + rf"\ \text{{{elements}}}")
    total = sum(r["bytes_per_step"] for r in rows)
    steps.append(rf"\text{{{bytes_}}} = \text{{{elements}}} \times {element_bytes} = {tex(total)}")
    return steps


def strategy_gb_per_step(inputs: Mapping[str, float]) -> Solution:
    """GB one GPU sends in one step for one strategy (`strategy` index), per the calculator."""
    query = _query(inputs)
    result = communication_result(query)
    strategy = STRATEGY_ORDER[int(inputs["strategy"])]
    rows = [r for r in result["collectives"] if r["strategy"] == strategy]
    if not rows:
        raise ValueError(f"this layout has no {strategy} communication")
    return Solution(
        answer=sum(r["bytes_per_step"] for r in rows) / 1e9,
        prompt_fields={
            **_layout_fields(query, result),
            "strategy": say(STRATEGY_WORDS, strategy),
        },
        steps_latex=_row_steps(rows, result["bytes_per_element"]),
    )


def step_time_s(inputs: Mapping[str, float]) -> Solution:
    """The step time in seconds with perfect overlap (`overlap` 0) or none (1)."""
    query = _query(inputs)
    result = communication_result(query)
    overlap = int(inputs["overlap"])
    comm, compute = result["comm_s"], result["compute_s"]
    times = " + ".join(f"{tex(s['time_s'])}" for s in result["strategies"] if s["time_s"] > 0)
    bound = (
        rf"T_\text{{step}} = \max(T_c, T_m) = \max({tex(compute)}, {tex(comm)}) = "
        rf"{tex(result['step_s_perfect_overlap'])}\ \text{{s}}"
        if overlap == 0
        else rf"T_\text{{step}} = T_c + T_m = {tex(compute)} + {tex(comm)} = "
        rf"{tex(result['step_s_no_overlap'])}\ \text{{s}}"
    )
    calls = gettext("calls")
    return Solution(
        answer=result["step_s_perfect_overlap"] if overlap == 0 else result["step_s_no_overlap"],
        prompt_fields={**_layout_fields(query, result), "overlap": gettext(OVERLAP_NAMES[overlap])},
        steps_latex=[
            r"\max(T_c, T_m) \le T_\text{step} \le T_c + T_m,\qquad "
            rf"T_m = \sum \text{{{calls}}} \times "
            r"\left(k\,\alpha + \frac{V}{\beta}\right)",
            rf"T_m = {times} = {tex(comm)}\ \text{{s}}",
            bound,
        ],
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "comm.ring_gb_per_rank": ring_gb_per_rank,
    "comm.ring_time_ms": ring_time_ms,
    "comm.tp_layer_mb": tp_layer_mb,
    "comm.strategy_gb_per_step": strategy_gb_per_step,
    "comm.step_time_s": step_time_s,
}
