"""The ZeRO summary shows the CUDA allocator's table only when the ranks reported one, and the
step's traced peak term by term, with the allocator's peak beside it on CUDA."""

from __future__ import annotations

from typing import Any

from app.live.pages.zero_stages import STRATEGIES, ZeroPrediction
from app.templating import templates
from demos.specs.zero_stages import ZeroStagesParams

PARAMS = ZeroStagesParams(width=16, layers=1, vocab=10, seq_len=8, batch=1, steps=3)
TERMS = {"params": 100, "grads": 20, "optimizer": 200, "batch": 72, "buckets": 0,
         "gathered": 0, "fsdp_buffers": 0, "forward": 1000, "backward": 300, "step": 0}  # fmt: skip
PEAK = {"bytes": sum(TERMS.values()), "phase": "backward", "op": "mm", "terms": TERMS}


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
            "peak": [PEAK],
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
    assert 'id="zero-peak-table"' in html and "Not traced" not in html
    assert html.count('<td class="num">320</td>') == len(STRATEGIES)  # states at the peak
    assert html.count('<td class="num measured">1,692</td>') == len(STRATEGIES)


def test_cuda_runs_add_the_allocator_per_phase() -> None:
    reading = {"allocated": 1_000_000, "max_allocated": 3_000_000, "reserved": 4_194_304}
    html = _render({"forward": reading, "backward": reading, "step": reading})
    assert 'id="zero-cuda-table"' in html
    # the step's peak, in the allocator's table and beside the traced peak
    assert html.count('<td class="num">3,000,000</td>') == 2 * len(STRATEGIES)
    assert html.count('<td class="num">4,194,304</td>') == len(STRATEGIES)  # reserved
    # the peak table: the allocator's peak, and what it holds beyond the traced tensors
    assert "Not traced" in html
    assert html.count('<td class="num">2,998,308</td>') == len(STRATEGIES)


def test_the_memory_table_gives_ranks_with_the_same_bytes_one_row() -> None:
    """At 64 ranks the table had 1,024 rows; ranks alike now share one."""
    from app.live.pages.zero_stages import PAGE
    from demos.specs.zero_stages import ZeroStagesParams

    prediction = PAGE.predict(ZeroStagesParams(), 64)
    ddp = [prediction.memory("ddp", rank) for rank in range(64)]
    assert [rank for rank, _, _ in prediction.memory_by_ranks("ddp", ddp)] == ["0–63"]
    # a rank measured differently from its neighbours keeps a row of its own
    odd = [dict(m) for m in ddp]
    odd[5]["grads"] += 4
    rows = prediction.memory_by_ranks("ddp", odd)
    assert [rank for rank, _, _ in rows] == ["0–4", "5", "6–63"]
    assert rows[1][1]["grads"] == rows[1][2]["grads"] + 4
    zero1 = [prediction.memory("zero1", rank) for rank in range(64)]
    grouped = prediction.memory_by_ranks("zero1", zero1)
    assert sum(len(_ranks(label)) for label, _, _ in grouped) == 64


def _ranks(label: str) -> range:
    first, _, last = label.partition("–")
    return range(int(first), int(last or first) + 1)
