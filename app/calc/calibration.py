r"""Fit a performance profile (app.calc.performance) to measured training runs, and say how well
it explains them.

`fit(runs)` is a least-squares fit of the profile's named parameters on log step time,
r_i = ln(predicted_i / measured_i), each parameter kept inside the bounds that keep it physical
(scipy.optimize.least_squares, trust-region reflective). Parameters that the runs cannot tell
apart stay near their physical defaults: each adds a weak prior residual
PRIOR_WEIGHT (x - x_0) / (high - low), so that with few runs the fit moves only what they
measure. Runs that report their peak memory fit the memory parameters the same way, on log
peak bytes.

The report gives each run's prediction, measurement and residual, and a leave-one-out
cross-validation: each run predicted by a profile fitted to the others, the honest estimate of
how far off the model is on a run it has not seen.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from app.calc.messages import N_, Message, words_of
from app.calc.model import PRESETS, ModelConfig
from app.calc.performance import (
    MEMORY_PARAMETERS,
    PARAMETERS,
    PerformanceProfile,
)
from app.calc.planner.costs import Costs
from app.calc.planner.request import Layout, PlanRequest, cluster, plan_request, resolve_model
from app.calc.planner.results import LayoutCost
from app.calc.planner.rules import violations

# What a fit moves by default: what published and benchmark runs can tell apart. The others
# keep their physical defaults unless asked for.
TIME_FREE = (
    "gemm_efficiency", "hbm_efficiency", "kernel_overhead_s", "inter_link_efficiency",
    "intra_link_efficiency", "overlap_slowdown", "dp_overlap", "microbatch_overhead_s",
)  # fmt: skip
MEMORY_FREE = ("logit_bytes", "context_bytes", "allocator_fraction")
PRIOR_WEIGHT = 0.05
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


@dataclass(frozen=True)
class Residual:
    """One run under a profile: predicted and measured, and their log ratio."""

    name: str
    measured_step_s: float
    predicted_step_s: float
    held_out_step_s: float | None  # predicted by the profile fitted without this run
    measured_memory_bytes: float | None
    predicted_memory_bytes: float

    @property
    def ratio(self) -> float:
        return self.predicted_step_s / self.measured_step_s

    @property
    def held_out_ratio(self) -> float | None:
        if self.held_out_step_s is None:
            return None
        return self.held_out_step_s / self.measured_step_s

    @property
    def memory_ratio(self) -> float | None:
        if self.measured_memory_bytes is None:
            return None
        return self.predicted_memory_bytes / self.measured_memory_bytes


@dataclass(frozen=True)
class Report:
    residuals: tuple[Residual, ...]
    free: tuple[str, ...]  # the parameters the fit moved

    def _errors(self, ratios: Iterable[float | None]) -> list[float]:
        return [abs(r - 1) for r in ratios if r is not None]

    @property
    def mean_error(self) -> float:
        """Mean |predicted / measured - 1| over the runs, with the fitted profile."""
        return float(np.mean(self._errors(r.ratio for r in self.residuals)))

    @property
    def worst_error(self) -> float:
        return max(self._errors(r.ratio for r in self.residuals))

    @property
    def held_out_mean_error(self) -> float | None:
        """The same, each run predicted by the profile fitted to the others (None: fewer than
        three runs, or no cross-validation asked for)."""
        errors = self._errors(r.held_out_ratio for r in self.residuals)
        return float(np.mean(errors)) if errors else None

    @property
    def held_out_worst_error(self) -> float | None:
        errors = self._errors(r.held_out_ratio for r in self.residuals)
        return max(errors) if errors else None

    @property
    def memory_mean_error(self) -> float | None:
        errors = self._errors(r.memory_ratio for r in self.residuals)
        return float(np.mean(errors)) if errors else None


@dataclass(frozen=True)
class Calibration:
    profile: PerformanceProfile
    report: Report
    runs: tuple[MeasuredRun, ...] = field(repr=False, default=())


def predict(run: MeasuredRun, profile: PerformanceProfile) -> LayoutCost:
    """The planner's cost of the run's layout under `profile`."""
    return Costs(replace(run.request, profile=profile)).cost(run.layout)


def _fit_parameters(
    runs: Sequence[MeasuredRun],
    start: PerformanceProfile,
    free: Sequence[str],
    measured: Any,
    prior_weight: float,
) -> PerformanceProfile:
    """Least squares of ln(predicted / measured) over `runs`, moving `free` inside bounds;
    `measured` picks (value, predicted value of a cost) per run."""
    if not free or not runs:
        return start
    low = np.array([PARAMETERS[n].low for n in free])
    high = np.array([PARAMETERS[n].high for n in free])
    x0 = np.clip([getattr(start, n) for n in free], low, high)
    span = high - low

    def profile_at(x: np.ndarray) -> PerformanceProfile:
        return start.with_values(**{n: float(v) for n, v in zip(free, x, strict=True)})

    def residuals(x: np.ndarray) -> np.ndarray:
        profile = profile_at(np.clip(x, low, high))
        fitted = [math.log(pred(predict(run, profile)) / value) for run, (value, pred) in
                  zip(runs, measured, strict=True)]  # fmt: skip
        prior = prior_weight * (x - x0) / span
        return np.concatenate([fitted, prior])

    result = least_squares(
        residuals, x0, bounds=(low, high), x_scale=span, diff_step=1e-3, xtol=1e-6,
        ftol=1e-8, max_nfev=200,
    )  # fmt: skip
    return profile_at(np.clip(result.x, low, high))


def _time_targets(runs: Sequence[MeasuredRun]) -> list[tuple[float, Any]]:
    return [(run.step_s, lambda cost: cost.step_time_s) for run in runs]


def _memory_targets(runs: Sequence[MeasuredRun]) -> list[tuple[float, Any]]:
    return [(float(run.peak_memory_bytes), lambda cost: cost.memory_bytes)  # type: ignore[arg-type]
            for run in runs]  # fmt: skip


def fit_profile(
    runs: Sequence[MeasuredRun],
    start: PerformanceProfile | None = None,
    free: Sequence[str] = TIME_FREE,
    memory_free: Sequence[str] = MEMORY_FREE,
    name: str = "fitted",
    source: str = "",
    prior_weight: float = PRIOR_WEIGHT,
    memory_runs: Sequence[MeasuredRun] = (),
) -> PerformanceProfile:
    """The profile that best explains `runs` (module docstring), without the report.
    `memory_runs` fit the memory terms only: runs whose step time is not to be trusted."""
    start = start or PerformanceProfile()
    _check_names(free, memory_free)
    profile = _fit_parameters(runs, start, free, _time_targets(runs), prior_weight)
    with_memory = [run for run in (*runs, *memory_runs) if run.peak_memory_bytes is not None]
    profile = _fit_parameters(
        with_memory, profile, memory_free, _memory_targets(with_memory), prior_weight
    )
    names = ", ".join(run.name for run in runs if run.name)
    return replace(profile, name=name, source=source or f"fitted to {len(runs)} runs: {names}")


def fit(
    runs: Sequence[MeasuredRun],
    start: PerformanceProfile | None = None,
    free: Sequence[str] = TIME_FREE,
    memory_free: Sequence[str] = MEMORY_FREE,
    cross_validate: bool = True,
    name: str = "fitted",
    source: str = "",
    prior_weight: float = PRIOR_WEIGHT,
    memory_runs: Sequence[MeasuredRun] = (),
) -> Calibration:
    """Fit a profile to `runs` and report each run's residual, with leave-one-out
    cross-validation when there are at least three runs. `memory_runs` (with their peak
    memory) join the fit of the memory terms only, and are not in the report."""
    runs = tuple(runs)
    if not runs:
        raise ValueError(Message(N_("no runs to fit: give at least one measured run")))
    if len(runs) > MAX_RUNS:
        template = N_("at most %(most)s runs can be fitted at once, got %(count)s")
        raise ValueError(Message(template, most=MAX_RUNS, count=len(runs)))
    profile = fit_profile(runs, start, free, memory_free, name, source, prior_weight, memory_runs)
    held_out: list[float | None] = [None] * len(runs)
    if cross_validate and len(runs) >= 3:
        for i, run in enumerate(runs):
            others = runs[:i] + runs[i + 1 :]
            without = fit_profile(others, start, free, memory_free=(), prior_weight=prior_weight)
            held_out[i] = predict(run, without).step_time_s
    residuals = []
    for run, out in zip(runs, held_out, strict=True):
        cost = predict(run, profile)
        residuals.append(
            Residual(
                run.name,
                run.step_s,
                cost.step_time_s,
                out,
                run.peak_memory_bytes,
                cost.memory_bytes,
            )  # fmt: skip
        )
    return Calibration(profile, Report(tuple(residuals), tuple(free)), runs)


def _check_names(*groups: Sequence[str]) -> None:
    for group in groups:
        unknown = [n for n in group if n not in PARAMETERS]
        if unknown:
            raise ValueError(f"unknown profile parameters: {', '.join(unknown)}")
    if set(groups[1]) - set(MEMORY_PARAMETERS):
        raise ValueError(f"memory fits move only {', '.join(MEMORY_PARAMETERS)}")


# ---------------------------------------------------------------------------------------------
# Runs files

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
    from app.calc.planner_query import GPU_TYPES

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
    from app.calc.planner_query import GPU_TYPES

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
