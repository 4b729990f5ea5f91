"""The activation-checkpointing and mixed-precision pages, streamed through the app."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.calc.activations import mlp_stack_saved_bytes
from app.calc.checkpointing import mlp_stack_backward_peak
from app.live.worker_process import LocalWorker
from tests.live.test_demo_routes import _sse_events
from tests.worker_fixture import run_job

WorkerInfo = tuple[LocalWorker, str, str]

pytestmark = pytest.mark.demo


def test_checkpointing_stream_ends_with_a_summary_that_matches(app_client: TestClient) -> None:
    params = {"layers": 2, "width": 16, "tokens": 8, "segment_layers": 2, "steps": 1}
    response = app_client.get("/demos/activation-checkpointing/stream", params=params)
    assert response.status_code == 200
    events = _sse_events(response.text)
    assert events[-1][0] == "done"
    assert [name for name, _ in events].count("measurement") == 3
    html = "".join(data for name, data in events if name == "message")
    none = mlp_stack_saved_bytes(2, 8, 16, 64, 4)  # 2 * 8 * (16 + 128) * 4 = 9,216
    assert none == 9_216
    assert len(re.findall(r'<td class="num saved">9,216</td>', html)) == 2  # both ranks
    # every layer checkpointed, in block 2: inputs 2 * 512 + block 2 rebuilt (4,608 - 512)
    # + gradients 8 * (16 + 64) * 4 + loss and seed 2 * 4
    assert mlp_stack_backward_peak(2, 8, 16, 64, 4, 1).total == 7_688
    assert len(re.findall(r'<td class="num peak">7,688</td>', html)) == 3  # 2 ranks, summary
    assert 'id="summary-table"' in html
    assert html.count("= prediction") == 6 and "≠ prediction" not in html  # saved, peak x 3


def test_mixed_precision_stream_ends_with_the_range_table(app_client: TestClient) -> None:
    params = {"gradients": 64, "loss_weight_exponent": 16, "spread_exponent": 14}
    response = app_client.get("/demos/mixed-precision/stream", params=params)
    assert response.status_code == 200
    events = _sse_events(response.text)
    assert events[-1][0] == "done"
    html = "".join(data for name, data in events if name == "message")
    assert 'id="range-table"' in html and 'id="limits-table"' in html
    assert "not as predicted" not in html and "≠" not in html
    assert "Finished." in html
    assert "the sum, on every rank, in every case" in html  # the all-reduce's result, judged


def test_the_mixed_precision_verdict_flags_a_wrong_all_reduce(demo_worker: WorkerInfo) -> None:
    """A real run's summary with one case's all-reduce marked wrong, as a rank that summed
    badly would report it (no real run sums wrongly on demand)."""
    from app.live.pages.mixed_precision import PAGE

    _, address, token = demo_worker
    params = {"gradients": 64, "loss_weight_exponent": 16, "spread_exponent": 14}
    summary = run_job(address, token, "mixed_precision", params)[-1]["summary"]
    prediction = PAGE.predict(PAGE.params(**params), 2)
    right = next(c for c in PAGE.verdict(summary, prediction, "gloo")
                 if c.quantity == "All-reduced gradients")  # fmt: skip
    assert right.status == "equal"
    summary["cases"][0]["all_reduce_correct"] = False
    wrong = next(c for c in PAGE.verdict(summary, prediction, "gloo")
                 if c.quantity == "All-reduced gradients")  # fmt: skip
    assert wrong.status == "unexpected" and wrong.measured == "wrong on some rank"


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        (
            "/demos/activation-checkpointing/run",
            {"layers": "9"},
            "Blocks: must be at most 8",
        ),
        (
            "/demos/activation-checkpointing/run",
            {"layers": "2", "segment_layers": "3"},
            "a segment of 3 blocks is longer than the 2-block stack",
        ),
        (
            "/demos/mixed-precision/run",
            {"loss_weight_exponent": "25"},
            "Loss weight exponent k: must be at most 24",
        ),
    ],
)
def test_out_of_bounds_parameters_are_refused(
    app_client: TestClient, path: str, params: dict, message: str
) -> None:
    panel = app_client.get(path, params=params)
    assert panel.status_code == 422 and message in panel.text
