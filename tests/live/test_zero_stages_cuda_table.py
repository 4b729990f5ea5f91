"""The ZeRO summary shows the CUDA allocator's table only when the ranks reported one."""

from __future__ import annotations

from typing import Any

from app.live.pages.zero_stages import STRATEGIES, ZeroPrediction
from app.templating import templates
from demos.specs.zero_stages import ZeroStagesParams

PARAMS = ZeroStagesParams(width=16, layers=1, vocab=10, seq_len=8, batch=1, steps=3)


def _summary(cuda: dict[str, Any] | None) -> dict[str, Any]:
    prediction = ZeroPrediction(PARAMS, 1)
    strategies = {
        s: {
            "step": 2,
            "memory": [prediction.memory(s, 0)],
            "phases": {
                p: {"collectives": [], "wire_bytes": 0} for p in ("forward", "backward", "step")
            },
            "logical_bytes": 0,
            "wire_bytes": [0],
            "median_time_s": 0.001,
            "losses": [2.0, 1.9, 1.8],
            "cuda": [cuda],
        }
        for s in STRATEGIES
    }
    return {"world_size": 1, "strategies": strategies, "correct": True}


def _render(cuda: dict[str, Any] | None) -> str:
    template = templates.get_template("demos/_zero_stages_summary.html")
    return template.render(summary=_summary(cuda), prediction=ZeroPrediction(PARAMS, 1))


def test_cpu_runs_show_only_the_tensor_accounting() -> None:
    html = _render(None)
    assert 'id="zero-memory-table"' in html and 'id="zero-cuda-table"' not in html


def test_cuda_runs_add_the_allocator_per_phase() -> None:
    reading = {"allocated": 1_000_000, "max_allocated": 3_000_000, "reserved": 4_194_304}
    html = _render({"forward": reading, "backward": reading, "step": reading})
    assert 'id="zero-cuda-table"' in html
    assert html.count('<td class="num">3,000,000</td>') == len(STRATEGIES)  # the step's peak
    assert html.count('<td class="num">4,194,304</td>') == len(STRATEGIES)  # reserved
