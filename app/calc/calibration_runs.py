"""Measured training runs, and the runs files they come from: what app.calc.calibration fits.

A runs file (JSON or CSV, `load_runs`) says per run: the model (a preset name, or its shape:
layers, hidden, heads, kv_heads, ffn_hidden, vocab, ...), the cluster (gpu, gpus_per_node,
nodes, intra_node, inter_node), the batch (seq_len and global_batch_tokens, or
global_batch_sequences), the layout (dp, tp, pp, cp, ep, zero_stage, distributed_optimizer,
recompute, micro_batch, schedule, virtual_stages), the measured step (step_s, or
tokens_per_s_per_gpu) and, optionally, peak_memory_gb (or peak_memory_bytes). docs/calibration.md
documents every column with an example.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.calc.messages import N_, Message, words_of
from app.calc.model import PRESETS, ModelConfig
from app.calc.planner.request import Layout, PlanRequest, cluster, plan_request, resolve_model
from app.calc.planner.rules import violations

MAX_RUNS = 5000


@dataclass(frozen=True)
class MeasuredRun:
    """One measured training run: what was asked, the layout that ran, its step time and,
    where measured, the peak memory of its fullest GPU (what the allocator reserved)."""

    request: PlanRequest
    layout: Layout
    step_s: float
    peak_memory_bytes: float | None = None
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.step_s, int | float) and math.isfinite(self.step_s)
                and self.step_s > 0):  # fmt: skip
            self._refuse(Message(N_("the step time must be a positive number")))
        memory = self.peak_memory_bytes
        if memory is not None and not (math.isfinite(memory) and memory > 0):
            self._refuse(Message(N_("the peak memory must be positive")))
        broken = violations(self.request, self.layout)
        if broken:
            each = [Message("%(rule)s: %(reason)s", rule=r.rule, reason=r.reason) for r in broken]
            reasons = Message.join("; ", each)
            self._refuse(Message(N_("the layout is not valid (%(reasons)s)"), reasons=reasons))

    def _refuse(self, problem: Message) -> None:
        raise RunError(Message(N_("run %(run)s: %(problem)s"), run=self.name or "?",
                               problem=problem), problem)  # fmt: skip


class RunError(ValueError):
    """A measured run that cannot be fitted; `problem` says why without naming the run."""

    def __init__(self, message: Message, problem: Message) -> None:
        super().__init__(message)
        self.problem = problem


MODEL_SHAPE = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")
MODEL_OPTIONAL = {
    "head_dim": int, "ffn_type": str, "norm": str, "tied_embeddings": bool,
    "attention_bias": bool, "mlp_bias": bool, "learned_positions": int, "experts": int,
    "top_k": int, "shared_experts": int,
}  # fmt: skip
LAYOUT_INTS = ("dp", "tp", "pp", "cp", "ep", "zero_stage", "micro_batch", "virtual_stages")
CLUSTER_FIELDS = ("gpu", "gpus_per_node", "nodes", "intra_node", "inter_node")
RUN_FIELDS = (
    "name", "source", "model", *MODEL_SHAPE, *MODEL_OPTIONAL, *CLUSTER_FIELDS, "seq_len",
    "global_batch_tokens", "global_batch_sequences", *LAYOUT_INTS, "distributed_optimizer",
    "recompute", "schedule", "flash_attention", "uneven_pipeline", "dropout", "step_s",
    "tokens_per_s_per_gpu", "peak_memory_gb", "peak_memory_bytes",
)  # fmt: skip


def _refused(where: Message, problem: Message) -> ValueError:
    """What is wrong with a run's row, naming the run."""
    return ValueError(Message(N_("%(where)s: %(problem)s"), where=where, problem=problem))


def _field(template: str, key: str, value: object) -> Message:
    return Message(template, key=key, value=repr(value))


def _number(row: Mapping[str, Any], key: str, where: Message, kind: type = float) -> Any:
    value = row[key]
    if isinstance(value, str):
        value = value.strip()
        if kind is bool:
            if value.lower() in ("true", "1", "yes"):
                return True
            if value.lower() in ("false", "0", "no", ""):
                return False
            raise _refused(where, _field(_NOT_BOOL, key, value))
        try:
            value = float(value)
        except ValueError:
            raise _refused(where, _field(N_("%(key)s must be a number, got %(value)s"), key,
                                         value)) from None  # fmt: skip
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise _refused(where, _field(_NOT_BOOL, key, value))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _refused(where, _field(N_("%(key)s must be a finite number, got %(value)s"), key,
                                     value))  # fmt: skip
    if kind is int:
        if value != int(value):
            raise _refused(where, _field(N_("%(key)s must be a whole number, got %(value)s"),
                                         key, value))  # fmt: skip
        return int(value)
    return float(value)


_NOT_BOOL = N_("%(key)s must be true or false, got %(value)s")


def _present(row: Mapping[str, Any], key: str) -> bool:
    return key in row and row[key] not in (None, "")


def _model(row: Mapping[str, Any], where: Message) -> ModelConfig:
    if _present(row, "model"):
        model = row["model"]
        try:
            return resolve_model(model if isinstance(model, Mapping) else str(model))
        except ValueError as error:
            raise _refused(where, words_of(error)) from None
    missing = [k for k in MODEL_SHAPE if not _present(row, k)]
    if missing:
        template = N_("give a model preset ('model') or its shape; missing %(missing)s")
        raise _refused(where, Message(template, missing=", ".join(missing)))
    values: dict[str, Any] = {k: _number(row, k, where, int) for k in MODEL_SHAPE}
    for key, kind in MODEL_OPTIONAL.items():
        if _present(row, key):
            values[key] = str(row[key]) if kind is str else _number(row, key, where, kind)
    try:
        return ModelConfig(**values, name=str(row.get("name") or "custom"))
    except (TypeError, ValueError) as error:
        raise _refused(where, words_of(error)) from None


def run_from_row(row: Mapping[str, Any], index: int) -> MeasuredRun:
    """One run from a runs file's row (module docstring); ValueError says what is wrong."""
    from app.calc.planner_fields import GPU_TYPES

    name = str(row.get("name") or f"run {index + 1}")
    where = (
        Message(N_("run %(number)s (%(name)s)"), number=index + 1, name=name)
        if row.get("name")
        else Message(N_("run %(number)s"), number=index + 1)
    )
    unknown = sorted(set(row) - set(RUN_FIELDS))
    if unknown:
        raise _refused(where, Message(N_("unknown fields %(fields)s"), fields=", ".join(unknown)))
    model = _model(row, where)
    gpu = str(row.get("gpu") or "h100-sxm")
    if gpu not in GPU_TYPES:
        template = N_("unknown gpu %(gpu)s; choose one of %(choices)s")
        raise _refused(where, Message(template, gpu=repr(gpu), choices=", ".join(GPU_TYPES)))
    kind = GPU_TYPES[gpu]
    ints = {k: _number(row, k, where, int) for k in ("gpus_per_node", "nodes", "seq_len")
            if _present(row, k)}  # fmt: skip
    if "seq_len" not in ints:
        raise _refused(where, Message(N_("seq_len is missing")))
    try:
        machines = cluster(
            kind.accelerator, kind.memory, ints.get("gpus_per_node", 8), ints.get("nodes", 1),
            str(row.get("intra_node") or kind.intra_node), str(row.get("inter_node") or "ib-ndr"),
        )  # fmt: skip
    except ValueError as error:
        raise _refused(where, words_of(error)) from None
    seq_len = ints["seq_len"]
    if _present(row, "global_batch_tokens"):
        tokens = _number(row, "global_batch_tokens", where, int)
    elif _present(row, "global_batch_sequences"):
        tokens = _number(row, "global_batch_sequences", where, int) * seq_len
    else:
        raise _refused(where, Message(N_("give global_batch_tokens or global_batch_sequences")))
    degrees = {k: _number(row, k, where, int) for k in LAYOUT_INTS if _present(row, k)}
    gpus = machines.gpus
    if "dp" not in degrees:
        rest = gpus // math.prod(degrees.get(k, 1) for k in ("tp", "pp", "cp"))
        degrees["dp"] = max(rest, 1)
    flags = {k: _number(row, k, where, bool) for k in ("distributed_optimizer",)
             if _present(row, k)}  # fmt: skip
    words = {k: str(row[k]) for k in ("recompute", "schedule") if _present(row, k)}
    options = {
        k: _number(row, k, where, bool)
        for k in ("flash_attention", "uneven_pipeline", "dropout")
        if _present(row, k)
    }
    try:
        layout = Layout(**degrees, **flags, **words)
        request = plan_request(model, machines, tokens, seq_len, 1e12, **options)
    except (TypeError, ValueError) as error:
        raise _refused(where, words_of(error)) from None
    if _present(row, "step_s"):
        step_s = _number(row, "step_s", where)
    elif _present(row, "tokens_per_s_per_gpu"):
        rate = _number(row, "tokens_per_s_per_gpu", where)
        if rate <= 0:
            raise _refused(where, Message(N_("tokens_per_s_per_gpu must be positive")))
        step_s = tokens / (rate * gpus)
    else:
        raise _refused(where, Message(N_("give the measured step_s or tokens_per_s_per_gpu")))
    memory = None
    if _present(row, "peak_memory_bytes"):
        memory = _number(row, "peak_memory_bytes", where)
    elif _present(row, "peak_memory_gb"):
        memory = _number(row, "peak_memory_gb", where) * 1e9
    try:
        return MeasuredRun(request, layout, step_s, memory, name, str(row.get("source") or ""))
    except RunError as error:
        raise _refused(where, error.problem) from None


def load_runs(text: str, kind: str | None = None) -> list[MeasuredRun]:
    """Runs from a runs file's text: JSON (a list of runs, or {"runs": [...]}) or CSV with a
    header row; `kind` "json" or "csv", else guessed from the first character."""
    stripped = text.lstrip()
    if not stripped:
        raise ValueError(Message(N_("the runs file is empty")))
    kind = kind or ("json" if stripped[0] in "[{" else "csv")
    if kind == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            template = N_("the runs file is not valid JSON: %(error)s")
            raise ValueError(Message(template, error=str(error))) from None
        rows = data.get("runs") if isinstance(data, dict) else data
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            template = N_('a JSON runs file is a list of runs or {"runs": [...]}, each an object')
            raise ValueError(Message(template))
    elif kind == "csv":
        reader = csv.DictReader(io.StringIO(text))
        try:
            if not reader.fieldnames:
                raise ValueError(Message(N_("the CSV runs file has no header row")))
            rows = [{k.strip(): v for k, v in row.items() if k} for row in reader]
        except csv.Error as error:
            template = N_("the runs file is not valid CSV: %(error)s")
            raise ValueError(Message(template, error=str(error))) from None
    else:
        raise ValueError(Message(N_("a runs file is JSON or CSV")))
    if not rows:
        raise ValueError(Message(N_("the runs file holds no run")))
    if len(rows) > MAX_RUNS:
        template = N_("at most %(most)s runs in one file, got %(count)s")
        raise ValueError(Message(template, most=MAX_RUNS, count=len(rows)))
    return [run_from_row(row, i) for i, row in enumerate(rows)]


def run_to_row(run: MeasuredRun) -> dict[str, Any]:
    """A run as a runs file's row (load_runs reads it back to the same run)."""
    from app.calc.planner_fields import GPU_TYPES

    req, lay = run.request, run.layout
    cfg = req.model
    gpu = next(
        (
            slug
            for slug, kind in GPU_TYPES.items()
            if kind.accelerator == req.cluster.accelerator.slug
        ),
        "h100-sxm",
    )
    row: dict[str, Any] = {"name": run.name}
    if run.source:
        row["source"] = run.source
    preset = next((name for name, model in PRESETS.items() if model == cfg), None)
    if preset:
        row["model"] = preset
    else:
        row.update({k: getattr(cfg, k) for k in MODEL_SHAPE})
        row.update({k: getattr(cfg, k) for k in MODEL_OPTIONAL if getattr(cfg, k) is not None})
    row.update(
        gpu=gpu, gpus_per_node=req.cluster.gpus_per_node, nodes=req.cluster.nodes,
        intra_node=req.cluster.intra_node.slug, inter_node=req.cluster.inter_node.slug,
        seq_len=req.seq_len, global_batch_tokens=req.global_batch_tokens,
        dp=lay.dp, tp=lay.tp, pp=lay.pp, cp=lay.cp, ep=lay.ep, zero_stage=lay.zero_stage,
        distributed_optimizer=lay.distributed_optimizer, recompute=lay.recompute,
        micro_batch=lay.micro_batch, schedule=lay.schedule, virtual_stages=lay.virtual_stages,
        flash_attention=req.flash_attention, uneven_pipeline=req.uneven_pipeline,
        dropout=req.dropout, step_s=run.step_s,
    )  # fmt: skip
    if run.peak_memory_bytes is not None:
        row["peak_memory_bytes"] = run.peak_memory_bytes
    return row
