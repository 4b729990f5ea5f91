"""The tensor-parallel and collectives demos streamed through the app, with its own worker."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.live.test_demo_routes import _sse_events

pytestmark = pytest.mark.demo


TP = {"layout": "all", "hidden": 32, "ffn_multiple": 2, "batch": 2, "seq_len": 4, "heads": 2}


def test_tensor_parallel_streams_every_split_and_agrees_with_the_prediction(
    app_client: TestClient,
) -> None:
    response = app_client.get("/demos/tensor-parallel/stream", params={**TP, "iterations": 1})
    assert response.status_code == 200
    events = _sse_events(response.text)
    assert events[-1][0] == "done"
    assert [name for name, _ in events].count("measurement") == 3
    html = "".join(data for name, data in events if name == "message")
    # 8 tokens x 32 x 4 B = 1,024 B all-reduced in each pass at N = 2: 2,048 B per step.
    assert html.count('<td class="num logical">2,048</td>') == 4  # 2 splits x 2 ranks
    # Row then column: 2,048 B wide all-reduce + half of a 1,024 B all-gather, twice.
    assert html.count('<td class="num logical">5,120</td>') == 2
    assert html.count("= prediction") == 6 and "≠ prediction" not in html
    assert html.count("equal the one-rank result") == 3


def test_tensor_parallel_panel_warns_when_the_heads_do_not_split(app_client: TestClient) -> None:
    params = {**TP, "heads": 1, "layout": "attention_heads", "iterations": 1}
    panel = app_client.get("/demos/tensor-parallel/run", params=params)
    assert panel.status_code == 200
    assert "1 heads cannot be split over the worker&#39;s 2 ranks" in panel.text


def test_tensor_parallel_refuses_a_block_it_cannot_build(app_client: TestClient) -> None:
    panel = app_client.get("/demos/tensor-parallel/run", params={**TP, "heads": 3})
    assert panel.status_code == 422
    assert "heads (3) must divide hidden (32)" in panel.text
    stream = app_client.get("/demos/tensor-parallel/stream", params={**TP, "hidden": 1024})
    assert stream.status_code == 422
    assert stream.json()["detail"][0]["loc"] == ["query", "hidden"]


def test_collectives_stream_rows_chart_points_and_the_comparison(app_client: TestClient) -> None:
    params = {"max_size_mib": 0.25, "sizes": 2, "iterations": 1}
    response = app_client.get("/demos/collectives/stream", params=params)
    assert response.status_code == 200
    events = _sse_events(response.text)
    assert events[-1][0] == "done"
    points = [json.loads(data) for name, data in events if name == "measurement"]
    assert [(p["payload_bytes"], p["kind"]) for p in points[:2]] == [
        (65_536, "all-reduce"),
        (65_536, "reduce-scatter"),
    ]
    assert len(points) == 10 and all(p["busbw_gbps"] > 0 for p in points)
    html = "".join(data for name, data in events if name == "message")
    # 256 KiB at N = 2: the ring sends S for an all-reduce and S/2 for a reduce-scatter.
    assert '<td class="num logical">262,144</td>' in html
    assert '<td class="num logical">131,072</td>' in html
    assert html.count("= prediction") == 10 and "≠ prediction" not in html
    assert html.count("as predicted") == 10
    assert '<td class="num rs-ag-logical">262,144</td>' in html
    # gloo logs its own name for each op and records no time: the wall clock times them
    assert html.count('<td class="recorded">gloo:all_reduce</td>') == 4  # AR and RS, 2 sizes
    assert html.count("Times are the wall clock around each clean run") == 1
    assert "*</td>" not in html  # one clock for every row: none marked
    assert all(p["peak_busbw_gbps"] is None for p in points)
    assert "CPU ranks talk through the kernel" in html


def test_collectives_refuse_a_buffer_over_the_bound(app_client: TestClient) -> None:
    panel = app_client.get("/demos/collectives/run", params={"max_size_mib": 17})
    assert panel.status_code == 422
    assert "Largest buffer (MiB): must be at most 16" in panel.text


def test_on_nccl_the_page_times_by_nccls_events_and_draws_the_links_peak() -> None:
    """An NCCL run's summary and rows as the worker would send them on 2 H100s (this machine has
    no GPU, so the run is written out here): NCCL's durations set the time and busbw, and the
    chart's peak is NVLink 4's 450 GB/s one way."""
    from app.live.pages.collectives import PAGE, CollectivesPrediction, chart_points
    from app.templating import templates
    from demos.collectives import summary
    from demos.specs.collectives import CollectivesParams

    params = CollectivesParams(max_size_mib=1, sizes=1, iterations=1)
    s = 2**20
    logged = {"backend": "nccl", "name": "all_reduce", "kind": "all_reduce", "group": "0",
              "group_size": 2, "input_bytes": s, "output_bytes": s, "payload_bytes": s,
              "duration_s": 1e-5}  # fmt: skip
    rows = [
        {"rank": r, "device": "NVIDIA H100 80GB HBM3", "backend": "nccl", "kind": "all_reduce",
         "payload_bytes": s,
         "times_s": [5e-5], "recorded_times_s": [1e-5 * (r + 1)], "wire_bytes": [0],
         "logical_bytes": s, "collectives": [], "recorded": [logged], "correct": True}
        for r in range(2)
    ]  # fmt: skip
    event = {"ranks": rows, "correct": True}
    prediction = CollectivesPrediction(params, world_size=2)
    [result] = summary(params, 2, [event])["results"]
    assert result["time_source"] == "recorded"
    assert result["median_time_s"] == 2e-5  # the slower rank's NCCL time, not the wall clock
    assert result["busbw_gbps"] == pytest.approx(s / 2e-5 / 1e9)  # 2(N-1)/N = 1 at N = 2
    point = chart_points(event, prediction)
    assert point["peak_busbw_gbps"] == 450.0
    assert point["peak_label"] == "NVLink 4 (18 links)"
    # a second size whose records had no duration on one rank: timed by the wall clock, marked
    late = [{**row, "payload_bytes": 2 * s, "recorded_times_s": None if row["rank"] else [1e-5]}
            for row in rows]  # fmt: skip
    mixed = summary(params, 2, [event, {"ranks": late, "correct": True}])
    html = templates.get_template("demos/_collectives_summary.html").render(
        summary=mixed, prediction=prediction, world_size=2
    )
    assert "rows marked * are timed by the wall clock" in html
    assert html.count("*</td>") == 1
    gloo_on_cuda = {"ranks": [{**row, "backend": "gloo"} for row in rows], "correct": True}
    assert chart_points(gloo_on_cuda, prediction)["peak_busbw_gbps"] is None
    checks = PAGE.verdict(summary(params, 2, [event]), prediction, "nccl")
    assert [c.status for c in checks if c.quantity == "S in the backend's own log"] == ["equal"]
    assert checks[0].quantity == "Results of every collective" and checks[0].status == "equal"
    wrong = {"ranks": rows, "correct": False}
    [first, *_] = PAGE.verdict(summary(params, 2, [wrong]), prediction, "nccl")
    assert first.status == "unexpected" and first.measured == "wrong on some rank"
