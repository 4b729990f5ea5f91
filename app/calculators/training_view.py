"""The training-memory calculator's result as the page shows it.

Every number comes from app.calc.training; this module picks, orders and formats them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from app.calc.gpus import GPUS, Gpu
from app.calc.precision import conventions
from app.calc.training import MemoryReport, Verdict, memory_vs_dp, training_memory, verdict
from app.calc.training_query import TrainingQuery
from app.calc.units import MEMORY_UNITS
from app.formatting import memory
from app.i18n import N_
from app.worked.training import zero_stage_note

ZERO_STAGE_LABELS = ("ZeRO-0", "ZeRO-1", "ZeRO-2", "ZeRO-3")
CHART_DP = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Segment:
    label: str
    color: int
    x_percent: float
    width_percent: float


@dataclass(frozen=True)
class Bar:
    label: str
    total: str
    segments: list[Segment]
    fits: bool


@dataclass(frozen=True)
class TrainingView:
    query: TrainingQuery
    report: MemoryReport
    gpu: Gpu
    verdict: Verdict
    unit: str
    bars: list[Bar]  # this set-up first, then every ZeRO stage
    limit_percent: float  # where the GPU's memory falls on the bars' scale
    chart_json: str
    stage_notes: list[str]  # why a higher ZeRO stage needs more, where it does

    def fmt(self, n_bytes: float) -> str:
        return memory(n_bytes, self.unit)


def _reports_by_stage(query: TrainingQuery) -> list[MemoryReport]:
    setup = query.setup()
    reports = []
    for stage in range(4):
        parallel = replace(
            setup.parallel,
            zero_stage=stage,
            offload_params=setup.parallel.offload_params and stage == 3,
        )
        reports.append(training_memory(replace(setup, parallel=parallel)))
    return reports


def _bar(label: str, report: MemoryReport, scale: float, unit: str, gpu_bytes: float) -> Bar:
    x = 0.0
    segments = []
    for index, term in enumerate(report.terms):
        width = 100 * term.gpu_bytes / scale
        segments.append(Segment(term.label, index % 8, x, width))
        x += width
    return Bar(label, memory(report.gpu_bytes, unit), segments, report.gpu_bytes <= gpu_bytes)


def training_view(query: TrainingQuery) -> TrainingView:
    setup = query.setup()
    report = training_memory(setup)
    gpu = GPUS[query.gpu]
    by_stage = _reports_by_stage(query)
    scale = max([gpu.memory_bytes, report.gpu_bytes, *(r.gpu_bytes for r in by_stage)]) * 1.02
    bars = [_bar(N_("This set-up"), report, scale, query.unit, gpu.memory_bytes)]
    bars += [
        _bar(label, r, scale, query.unit, gpu.memory_bytes)
        for label, r in zip(ZERO_STAGE_LABELS, by_stage, strict=True)
    ]
    points = memory_vs_dp(setup, list(CHART_DP))
    chart = {
        "dp": [dp for dp, _ in points],
        "gpu_bytes": [b for _, b in points],
        "limit_bytes": gpu.memory_bytes,
        "unit": query.unit,
        "unit_bytes": MEMORY_UNITS[query.unit],
        "gpu": gpu.name,
    }
    notes = []
    for lower, higher in zip(by_stage, by_stage[1:], strict=False):
        if higher.gpu_bytes > lower.gpu_bytes:
            notes.append(zero_stage_note(lower, higher, query.unit))
    return TrainingView(
        query=query,
        report=report,
        gpu=gpu,
        verdict=verdict(setup, gpu.memory_bytes),
        unit=query.unit,
        bars=bars,
        limit_percent=100 * gpu.memory_bytes / scale,
        chart_json=json.dumps(chart),
        stage_notes=notes,
    )


__all__ = ["TrainingView", "conventions", "training_view"]
