"""The pipeline-schedules demo streamed through the app, against the worker the app starts."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.live.test_demo_routes import _sse_events

pytestmark = pytest.mark.demo


PARAMS = {"schedule": "1f1b", "microbatches": 2, "forward_ms": 2, "backward_ms": 4}


def test_stream_draws_both_gantts_and_ends_with_the_summary(app_client: TestClient) -> None:
    response = app_client.get("/demos/pipeline-schedules/stream", params=PARAMS)
    assert response.status_code == 200
    events = _sse_events(response.text)
    assert events[-1][0] == "done"
    html = "".join(data for name, data in events if name == "message")
    assert 'id="gantt-measured-1f1b"' in html and 'id="gantt-simulated-1f1b"' in html
    assert html.count('<tr data-schedule="1f1b" data-rank=') == 2
    # p = 2, m = 2: each rank sends 2 messages, as predicted.
    assert html.count('<td class="num sends">2 (2)</td>') == 2
    assert 'id="pp-summary" hx-swap-oob="true"' in html and "Finished." in html
    assert '<span class="ok">=</span>' in html
    assert '<span class="bad">differ</span>' not in html
    assert 'data-status="unexpected"' not in html


def test_run_panel_shows_each_schedules_prediction(app_client: TestClient) -> None:
    panel = app_client.get("/demos/pipeline-schedules/run", params={"microbatches": 3})
    assert panel.status_code == 200
    assert '<tr data-schedule="gpipe"><td>GPipe' in panel.text
    # GPipe, p = 2, m = 3: (p-1)/(m+p-1) = 1/4 of the step is bubble.
    assert '<td class="num">0.250</td>' in panel.text
    assert "Not run on 2 ranks: the interleaved schedule needs micro-batches" in panel.text


def test_out_of_bounds_micro_batches_are_refused(app_client: TestClient) -> None:
    panel = app_client.get("/demos/pipeline-schedules/run", params={"microbatches": "13"})
    assert panel.status_code == 422 and "Micro-batches: must be at most 12" in panel.text
    response = app_client.get("/demos/pipeline-schedules/stream", params={"compute": "gpu"})
    assert response.status_code == 422
