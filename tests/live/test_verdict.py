"""The verdict a demo page leads with, and a run's raw rows, without a worker: summaries shaped
as the demos report them, judged and rendered as the stream does."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from app.live.pages.all_reduce import AllReducePrediction
from app.live.pages.all_reduce import verdict as all_reduce_verdict
from app.live.pages.zero_stages import STRATEGIES, ZeroPrediction
from app.live.pages.zero_stages import verdict as zero_verdict
from app.live.raw_rows import measurement_rows, rows_csv, rows_json
from app.live.verdict import check, gloo_header_allowance_bytes, reason_lines, runs, tally
from app.templating import templates
from demos.specs.all_reduce import AllReduceParams
from demos.specs.zero_stages import ZeroStagesParams

MIB = 2**20


def test_a_check_is_equal_explained_or_unexpected() -> None:
    assert check("q", 8, 8).status == "equal"
    explained = check("q", 10, 8, reason="why", explained=True)
    assert (explained.status, explained.reason) == ("explained", "why")
    assert (explained.delta, explained.relative) == (2.0, 0.25)
    unexpected = check("q", 10, 8, reason="why")
    assert (unexpected.status, unexpected.reason) == ("unexpected", "")
    # The same bytes from other collectives still disagree.
    assert check("q", 8, 8, agrees=False).status == "unexpected"
    assert check("q", "equal", "equal", unit="text").delta is None
    assert check("q", 3, 0, explained=True).relative is None


def test_a_reason_is_written_once_after_the_rows_it_covers() -> None:
    rows = [
        check("a", 1, 1),
        check("b", 2, 1, reason="overhead", explained=True),
        check("c", 3, 1, reason="overhead", explained=True),
        check("d", 1, 1),
        check("e", 2, 1, reason="headers", explained=True),
        check("f", 2, 1),
        check("g", 2, 1),
    ]
    assert reason_lines(rows) == [0, 0, 2, 0, 1, 0, 2]
    assert tally(rows) == {"equal": 2, "explained": 3, "unexpected": 2}


def _all_reduce_summary(wire: list[float], logical: float = MIB) -> dict[str, Any]:
    return {"iterations": 2, "world_size": 2, "payload_bytes": MIB, "correct": True,
            "logical_bytes_per_rank": logical, "wire_bytes_per_rank": wire,
            "median_time_s": 0.003, "busbw_gbps": 0.3}  # fmt: skip


def test_all_reduce_wire_bytes_are_explained_by_gloo_headers_only() -> None:
    prediction = AllReducePrediction(AllReduceParams(size_mib=1, iterations=2), 2)
    logical, wire, result = all_reduce_verdict(
        _all_reduce_summary([MIB + 576] * 2), prediction, "gloo"
    )
    assert (logical.status, result.status) == ("equal", "equal")
    assert wire.status == "explained" and wire.delta == 576 and "headers" in wire.reason
    too_much = MIB + gloo_header_allowance_bytes(MIB, 2) + 1
    assert (
        all_reduce_verdict(_all_reduce_summary([too_much] * 2), prediction, "gloo")[1].status
        == "unexpected"
    )
    # NCCL over NVLink writes nothing a process's counter sees: less is explained there.
    on_nccl = all_reduce_verdict(_all_reduce_summary([0.0, 0.0]), prediction, "nccl")[1]
    assert on_nccl.status == "explained" and "NCCL" in on_nccl.reason
    wrong = all_reduce_verdict(_all_reduce_summary([MIB] * 2, logical=MIB / 2), prediction, "gloo")
    assert wrong[0].status == "unexpected"


ZERO = ZeroStagesParams(width=16, layers=1, vocab=10, seq_len=8, batch=1, steps=3)


def _zero_summary(prediction: ZeroPrediction) -> dict[str, Any]:
    """What the worker reports when torch does exactly what app.calc.sharding models."""
    strategies = {}
    for s in STRATEGIES:
        phases = {p: {"collectives": [], "logical_bytes": 0.0, "wire_bytes": 0}
                  for p in ("forward", "backward", "step")}  # fmt: skip
        for call in prediction.collectives(s):
            phases[call.phase]["collectives"].append(
                {
                    "kind": call.kind,
                    "count": call.count or 1,
                    "payload_bytes": call.payload_bytes,
                    "logical_bytes": call.logical_bytes,
                }  # fmt: skip
            )
        strategies[s] = {
            "step": 2,
            "memory": [prediction.memory(s, r) for r in range(prediction.world_size)],
            "phases": phases,
            "logical_bytes": prediction.logical_bytes(s),
            "wire_bytes": [0] * prediction.world_size,
            "median_time_s": 0.01,
            "losses": [2.0, 1.9, 1.8],
            "cuda": [None] * prediction.world_size,
            "buckets": [
                {
                    "allocated": None,
                    "built": [prediction.ddp_bucket_bytes],
                    "sizes": [prediction.ddp_bucket_bytes],
                }
                if s in ("ddp", "zero1")
                else None
                for _ in range(prediction.world_size)
            ],  # fmt: skip
        }
    return {"world_size": prediction.world_size, "strategies": strategies, "correct": True}


def test_zero_differs_from_the_paper_only_where_torchs_layout_does() -> None:
    prediction = ZeroPrediction(ZERO, 2)
    checks = zero_verdict(_zero_summary(prediction), prediction, "gloo")
    by = {(c.scope, c.quantity): c for c in checks}
    assert len(checks) == 11 and tally(checks)["unexpected"] == 0
    ddp = by[("DDP", "Model states, fullest rank")]
    # 3,760 parameters in 17 tensors: 16 B each, plus Adam's 4-byte step counter per tensor.
    assert (ddp.measured, ddp.predicted, ddp.status) == (60_228, 60_160, "explained")
    assert "step counter" in ddp.reason
    zero1 = by[("ZeRO-1", "Logical bytes sent per step")]
    assert (zero1.status, zero1.relative) == ("explained", 1.0)  # broadcasts: twice the paper's
    assert by[("DDP", "Logical bytes sent per step")].status == "equal"
    # torch DDP's buckets: 4 B for each of the 3,760 parameters, once more.
    buckets = by[("ZeRO-1", "DDP's gradient buckets, fullest rank")]
    assert (buckets.measured, buckets.predicted, buckets.status) == (15_040, 15_040, "equal")

    summary = _zero_summary(prediction)
    summary["strategies"]["zero3"]["memory"][1]["optimizer"] += 4  # a byte torch never holds
    summary["correct"] = False
    checks = zero_verdict(summary, prediction, "gloo")
    unexpected = [(c.scope, c.quantity) for c in checks if c.status == "unexpected"]
    assert unexpected == [("ZeRO-3", "Model states, fullest rank"), ("", "Loss curves vs DDP's")]


def test_a_total_equal_to_the_papers_with_bytes_in_the_wrong_phase_is_unexpected() -> None:
    # DDP's all-reduce in the step instead of backward: the step's total still equals the
    # paper's 2 (N-1)/N * 4 Psi, which alone used to read as equal.
    prediction = ZeroPrediction(ZERO, 2)
    summary = _zero_summary(prediction)
    phases = summary["strategies"]["ddp"]["phases"]
    phases["step"]["collectives"], phases["backward"]["collectives"] = (
        phases["backward"]["collectives"], [])  # fmt: skip
    by = {(c.scope, c.quantity): c for c in zero_verdict(summary, prediction, "gloo")}
    traffic = by[("DDP", "Logical bytes sent per step")]
    assert traffic.measured == traffic.predicted and traffic.status == "unexpected"


def test_ddps_activations_are_judged_against_the_training_calculators() -> None:
    prediction = ZeroPrediction(ZERO, 2)
    summary = _zero_summary(prediction)
    quantity = ("DDP", "Activations kept at the end of forward")
    for kept, status in ((prediction.forward_kept_bytes, "explained"),
                         (prediction.activation_bytes, "equal"),
                         (prediction.forward_kept_bytes + 4, "unexpected")):  # fmt: skip
        summary["strategies"]["ddp"]["peak"] = [{"forward_kept": kept}] * 2
        by = {(c.scope, c.quantity): c for c in zero_verdict(summary, prediction, "gloo")}
        assert by[quantity].status == status, kept
        assert by[quantity].predicted == prediction.activation_bytes
        assert ("log-sum-exp" in by[quantity].reason) == (status == "explained")


def test_ddp_buckets_on_cuda_are_judged_within_the_allocators_blocks() -> None:
    # Fakes of what a CUDA rank reports (no GPU here): the allocator's reading after DDP's
    # constructor, for one bucket of 15,040 B (not a multiple of 512: 15,360 in blocks).
    prediction = ZeroPrediction(ZERO, 2)
    summary = _zero_summary(prediction)
    reading = {"allocated": 0, "max_allocated": 0, "reserved": 0}
    phases = dict.fromkeys(("forward", "backward", "step"), reading)
    for s in ("ddp", "zero1"):
        summary["strategies"][s]["cuda"] = [phases] * 2
    allocator = "DDP's buckets as the CUDA allocator counts them, fullest rank"
    for allocated, status in ((15_360, "explained"), (15_040, "equal"), (30_080, "unexpected")):
        for s in ("ddp", "zero1"):
            summary["strategies"][s]["buckets"] = [
                {"allocated": allocated, "built": [15_040], "sizes": [15_040]}
            ] * 2
        by = {(c.scope, c.quantity): c for c in zero_verdict(summary, prediction, "nccl")}
        assert by[("DDP", allocator)].status == status, allocated
        assert by[("DDP", "DDP's gradient buckets, fullest rank")].status == "equal"
        if status == "explained":
            assert "512 B" in by[("DDP", allocator)].reason


def _render_verdict(checks: list) -> str:
    rows = list(zip(checks, reason_lines(checks), strict=True))
    return templates.get_template("demos/_verdict.html").render(rows=rows, tally=tally(checks))


def test_the_verdict_shows_the_difference_in_both_forms_and_the_reason() -> None:
    prediction = AllReducePrediction(AllReduceParams(size_mib=1, iterations=2), 2)
    html = _render_verdict(
        all_reduce_verdict(_all_reduce_summary([MIB + 576] * 2), prediction, "gloo")
    )
    assert 'id="demo-verdict-body" hx-swap-oob="true"' in html
    assert "<strong>2 of 3</strong> equal the prediction." in html
    assert '<td class="num measured">1,049,152 B</td>' in html
    assert '<span class="delta">Δ +576 B (+0.0549 %)</span>' in html
    assert "↳ gloo&#39;s message headers" in html
    assert html.count("✓") == 2


def test_raw_rows_are_one_per_rank_per_step_with_nested_fields_flattened() -> None:
    events = [
        {"event": "accepted", "world_size": 2},
        {"event": "measurement", "iteration": 0, "correct": True, "ranks": [
            {"rank": r, "strategy": "ddp", "loss": 2.5, "memory": {"params": 40, "grads": 40},
             "collectives": [{"kind": "all_reduce", "count": 1}], "cuda": None,
             "max_relative_error": math.inf}
            for r in range(2)]},
        {"event": "done", "summary": {}},
    ]  # fmt: skip
    rows = measurement_rows(events)
    assert [list(row)[:3] for row in rows] == [["iteration", "strategy", "rank"]] * 2
    assert rows[1]["memory.grads"] == 40 and rows[1]["rank"] == 1
    header, first, second = list(csv.reader(io.StringIO(rows_csv(rows))))
    cell = dict(zip(header, first, strict=True))
    assert cell["correct"] == "true" and cell["loss"] == "2.5" and cell["cuda"] == ""
    assert json.loads(cell["collectives"]) == [{"kind": "all_reduce", "count": 1}]
    assert cell["max_relative_error"] == "inf" and second[header.index("rank")] == "1"
    listed = json.loads(rows_json(rows))  # strict JSON: infinity becomes a string
    assert listed[0]["max_relative_error"] == "inf" and listed[0]["memory.params"] == 40
    assert rows_csv([]) == "\r\n"


def test_a_figure_per_rank_stays_short_at_64_ranks() -> None:
    # GPipe on 64 stages: the first and last send 8 messages, the others 16.
    assert runs([8] + [16] * 62 + [8]) == [(8, 1), (16, 62), (8, 1)]
    assert runs([4, 4]) == [(4, 1), (4, 1)]  # two ranks read best as they are
    assert runs(list(range(64, 0, -1))) == [(64, 1), (63, 1), (62, 1), None, (2, 1), (1, 1)]
    sends = check(
        "Messages sent per rank", [8] + [16] * 62 + [8], [8] + [16] * 62 + [8], unit="count"
    )
    html = _render_verdict([sends])
    assert '<td class="num measured">8, 16 ×62, 8</td>' in html
