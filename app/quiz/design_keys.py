"""What the calculators say a design round's answers are (issue #27): the checkpoint interval's
inputs and Young's and Daly's intervals, each serving TP's replicas, memory and decode step,
and the figures a round's prose names, filled from the same calls that grade the sheet
(app/quiz/design_sheet.py), so no number is typed twice."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from app.calc.checkpoint_size import checkpoint_bytes, write_time_s
from app.calc.decode import decode_step_s
from app.calc.failures import (
    HOUR,
    daly_interval,
    goodput,
    job_mtbf,
    mtbf_from_annual_rate,
    young_interval,
)
from app.calc.gpus import GPUS
from app.calc.hardware import ACCELERATORS
from app.calc.inference import (
    InferenceMemory,
    InferenceSetup,
    check_tensor_parallel,
    inference_memory,
)
from app.calc.messages import N_, Message, words_of
from app.calc.model import PRESETS, count_params
from app.calc.units import to_gb
from app.quiz.design_rounds import DesignRound, ServingInputs, TrainingInputs
from app.quiz.layouts import layout_text, plan_for

# --- the calculators' answers -------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointKey:
    bytes_: float
    write_s: float  # C
    node_mtbf_s: float
    job_mtbf_s: float  # M
    restart_s: float  # R
    young_s: float
    daly_s: float

    def goodput(self, interval_s: float) -> float:
        return goodput(interval_s, self.write_s, self.restart_s, self.job_mtbf_s)


def checkpoint_key(t: TrainingInputs) -> CheckpointKey:
    """Young's and Daly's intervals for the round's job: the checkpoint (weights, fp32 master
    and Adam's moments) written at the storage's bandwidth; the job fails when any node does."""
    size = checkpoint_bytes(count_params(PRESETS[t.model]).total).total
    write = write_time_s(size, t.checkpoint_gb_per_s * 1e9)
    node = mtbf_from_annual_rate(t.node_afr_percent)
    job = job_mtbf(node, t.nodes)
    return CheckpointKey(size, write, node, job, t.restart_minutes * 60,
                         young_interval(write, job), daly_interval(write, job))  # fmt: skip


@dataclass(frozen=True)
class ServingKey:
    """What one TP degree gives the round's service; `problem` says why it cannot be used."""

    tp: int
    problem: Message | None
    replicas: int = 0
    seqs_per_replica: int = 0
    memory: InferenceMemory | None = None
    decode_s: float = 0.0

    @property
    def fits(self) -> bool:
        return self.memory is not None and self.memory.fits


def serving_key(s: ServingInputs, tp: int) -> ServingKey:
    cfg = PRESETS[s.model]
    try:
        check_tensor_parallel(cfg, tp)
    except ValueError as exc:
        words = words_of(exc)  # a Message from app.calc: said in the reader's language
        return ServingKey(tp, words.sentence() if isinstance(words, Message) else Message(words))
    if tp > s.gpus_per_node:
        template = N_("TP %(tp)s spans more than a node of %(per_node)s GPUs: every layer's "
                      "all-reduce would cross the network")  # fmt: skip
        return ServingKey(tp, Message(template, tp=tp, per_node=s.gpus_per_node))
    if s.gpus % tp:
        template = N_("TP %(tp)s does not split the %(gpus)s GPUs into whole replicas")
        return ServingKey(tp, Message(template, tp=tp, gpus=s.gpus))
    replicas = s.gpus // tp
    seqs = math.ceil(s.concurrent / replicas)
    setup = InferenceSetup(cfg, s.weight_dtype, s.kv_dtype, tp, s.context, seqs,
                           gpu_memory_bytes=GPUS[s.gpu].memory_bytes)  # fmt: skip
    memory = inference_memory(setup)
    return ServingKey(
        tp, None, replicas, seqs, memory, decode_step_s(memory, ACCELERATORS[s.accelerator])
    )


def best_serving_key(s: ServingInputs) -> ServingKey:
    """The smallest TP that can be used and fits: the most replicas for the GPUs."""
    for tp in range(1, s.gpus_per_node + 1):
        key = serving_key(s, tp)
        if key.problem is None and key.fits:
            return key
    raise ValueError(f"{s.model}: no TP up to {s.gpus_per_node} fits")


# --- the figures a round's prose names (design_rounds.FIGURES) -----------------------------


def num(x: float, digits: int = 0) -> str:
    """A figure as the prose and the terms table print it: 1,234.5."""
    return f"{x:,.{digits}f}"


def _degrees(text: str) -> str:
    return text.split(",")[0]


def round_figures(round_: DesignRound) -> dict[str, str]:
    """The scenario's inputs and the calculators' answer, as the round's prose says them."""
    if round_.training is not None:
        return input_figures(round_) | _training_answer(round_.training)
    assert round_.serving is not None
    return input_figures(round_) | _serving_answer(round_.serving)


def input_figures(round_: DesignRound) -> dict[str, str]:
    """The figures that need no plan (design_rounds.INPUT_FIGURES): enough for a title."""
    inputs = round_.training or round_.serving
    assert inputs is not None
    cfg = PRESETS[inputs.model]
    common = {"model": cfg.name, "params_b": num(count_params(cfg).total / 1e9, 1)}
    if isinstance(inputs, ServingInputs):
        gpu = GPUS[inputs.gpu]
        return common | {
            "gpus": str(inputs.gpus), "gpus_per_node": str(inputs.gpus_per_node),
            "gpu": gpu.name, "capacity_gb": num(to_gb(gpu.memory_bytes), 1),
            "context": num(inputs.context), "concurrent": num(inputs.concurrent),
            "weight_dtype": inputs.weight_dtype, "kv_dtype": inputs.kv_dtype,
        }  # fmt: skip
    t = inputs
    return common | {
        "gpus": str(8 * t.nodes), "nodes": str(t.nodes),
        "accelerator": ACCELERATORS[t.accelerator].name,
        "capacity_gb": num(to_gb(GPUS[t.gpu].memory_bytes), 1),
        "batch_tokens": num(t.global_batch_tokens), "seq_len": num(t.seq_len),
        "token_budget_b": num(t.token_budget / 1e9), "deadline_days": num(t.deadline_days),
        "budget_gpu_hours": num(t.budget_gpu_hours), "afr_pct": num(t.node_afr_percent),
        "storage_gb_s": num(t.checkpoint_gb_per_s), "restart_min": num(t.restart_minutes),
    }  # fmt: skip


def _training_answer(t: TrainingInputs) -> dict[str, str]:
    plan_ = plan_for(t.scenario, t.token_budget)
    best, gpus, ck = plan_.best, plan_.request.cluster.gpus, checkpoint_key(t)
    assert best is not None
    best_text = layout_text(best.layout)
    return {
        "best_layout": best_text, "best_degrees": _degrees(best_text),
        "memory_gb": num(to_gb(best.memory_bytes), 1), "step_s": num(best.step_time_s, 2),
        "mfu_pct": num(best.mfu * 100), "days": num(best.days, 1),
        "gpu_hours": num(best.days * 24 * gpus),
        "checkpoint_gb": num(to_gb(ck.bytes_)), "write_s": num(ck.write_s),
        "node_mtbf_h": num(ck.node_mtbf_s / HOUR), "job_mtbf_h": num(ck.job_mtbf_s / HOUR),
        "young_min": num(ck.young_s / 60), "daly_min": num(ck.daly_s / 60),
        "goodput_pct": num(ck.goodput(ck.young_s) * 100, 1),
    }  # fmt: skip


def _serving_answer(s: ServingInputs) -> dict[str, str]:
    key = best_serving_key(s)
    memory = key.memory
    assert memory is not None
    return {
        "budget_gb": num(to_gb(memory.budget_bytes), 1),
        "tp": str(key.tp), "replicas": str(key.replicas),
        "seqs_per_replica": str(key.seqs_per_replica),
        "kv_kb_per_token": num(memory.kv_bytes_per_token_model / 1e3),
        "weights_gb": num(to_gb(memory.term("weights").bytes_), 1),
        "kv_gb": num(to_gb(memory.term("kv_cache").bytes_), 1),
        "total_gb": num(to_gb(memory.total_bytes), 1), "decode_ms": num(key.decode_s * 1e3, 1),
        "tokens_per_s": num(s.concurrent / key.decode_s),
        "largest_batch": num(memory.largest_batch),
    }  # fmt: skip


def filled(text: str, figures: Mapping[str, str]) -> str:
    return text.format_map(figures)
