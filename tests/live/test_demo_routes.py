"""The demo routes of the app, against the real worker the app starts itself."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import time

import pytest
from fastapi.testclient import TestClient

from app.calc.comm import Collective, ring_bytes_per_rank
from app.live.runs import start_run
from app.ratelimit import SlidingWindow, parse_rate

pytestmark = pytest.mark.demo


def _sse_events(text: str) -> list[tuple[str, str]]:
    """(event name, data) pairs; unnamed events are called 'message', as browsers do."""
    events = []
    for block in text.strip().split("\n\n"):
        lines = block.split("\n")
        name = next((ln[7:] for ln in lines if ln.startswith("event: ")), "message")
        data = "\n".join(ln[6:] for ln in lines if ln.startswith("data: "))
        events.append((name, data))
    return events


def test_stream_relays_rows_and_chart_points_and_ends_with_done(app_client: TestClient) -> None:
    response = app_client.get("/demos/all-reduce/stream", params={"size_mib": 1, "iterations": 2})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = _sse_events(response.text)
    assert events[-1][0] == "done"
    assert [name for name, _ in events].count("measurement") == 2
    rows = "".join(data for name, data in events if name == "message")
    predicted = ring_bytes_per_rank(Collective.ALL_REDUCE, 2**20, 2)
    assert len(re.findall(r'<td class="num logical">1,048,576</td>', rows)) == 4
    assert predicted == 2**20
    assert "Finished." in rows
    verdict = re.search(r'<tr data-status="(\w+)">\s*<th scope="row">Logical bytes sent', rows)
    assert verdict and verdict.group(1) == "equal"


def test_run_panel_shows_the_prediction(app_client: TestClient) -> None:
    panel = app_client.get("/demos/all-reduce/run", params={"size_mib": 2, "iterations": 3})
    assert panel.status_code == 200
    assert "N = 2 ranks (gloo)" in panel.text
    assert 'hx-get="/demos/all-reduce/stream?size_mib=2.0&amp;iterations=3"' in panel.text
    assert 'hx-sse:close="done"' in panel.text
    passes = re.search(r'<p [^>]*id="demo-passes">(.*?)</p>', panel.text, re.S)
    assert passes, "the panel does not say which pass its figures came from"
    assert "counted all-reduce, probes on" in passes.group(1)
    assert "clean all-reduce" in passes.group(1)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"size_mib": "0", "iterations": "3"}, "Buffer size (MiB): must be greater than 0"),
        ({"size_mib": "65", "iterations": "3"}, "Buffer size (MiB): must be at most 64"),
        ({"size_mib": "x", "iterations": "3"}, "Buffer size (MiB): must be a number"),
        ({"size_mib": "1", "iterations": "21"}, "Iterations: must be at most 20"),
    ],
)
def test_run_refuses_out_of_bounds_parameters(
    app_client: TestClient, params: dict, message: str
) -> None:
    panel = app_client.get("/demos/all-reduce/run", params=params)
    assert panel.status_code == 422 and message in panel.text


def test_stream_refuses_out_of_bounds_parameters(app_client: TestClient) -> None:
    response = app_client.get("/demos/all-reduce/stream", params={"size_mib": 1000})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", "size_mib"]


def test_a_killed_worker_is_replaced_by_the_watchdog_before_any_run(
    app_client: TestClient,
) -> None:
    # keep_worker_running notices within a second that the launcher died and starts a fresh
    # one. (This test used to wait for the dead state and then run: the watchdog could replace
    # the worker first, so it failed under load.)
    worker = app_client.app.state.worker
    killed = worker.pid
    os.killpg(killed, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (worker.running and worker.pid != killed):
        time.sleep(0.05)
    assert worker.running and worker.pid != killed and worker.restarts >= 1
    panel = app_client.get("/demos/all-reduce/run", params={"size_mib": 1, "iterations": 1})
    assert panel.status_code == 200, panel.text
    assert app_client.get("/healthz").json()["worker"].startswith("ok")


def test_a_stopped_worker_is_started_again_by_the_next_run(app_client: TestClient) -> None:
    # A worker stopped on purpose is not the watchdog's to restart (it has no process left to
    # find dead): the next run starts it (ensure_worker).
    worker = app_client.app.state.worker
    worker.stop()
    time.sleep(1.5)  # longer than the watchdog's interval: it must leave a stopped worker be
    assert not worker.running
    panel = app_client.get("/demos/all-reduce/run", params={"size_mib": 1, "iterations": 1})
    assert panel.status_code == 200, panel.text
    assert worker.running
    assert app_client.get("/healthz").json()["worker"].startswith("ok")


def test_a_finished_run_is_kept_and_replays_from_its_share_link(app_client: TestClient) -> None:
    live = app_client.get("/demos/all-reduce/stream", params={"size_mib": 1, "iterations": 2})
    match = re.search(r'href="/demos/runs/([\w-]+)"', live.text)
    assert match, "no share link in the finished stream"
    run_id = match.group(1)

    page = app_client.get(f"/demos/runs/{run_id}")
    assert page.status_code == 200
    assert f'hx-get="/demos/runs/{run_id}/events"' in page.text
    assert 'name="size_mib"' in page.text and 'value="1.0"' in page.text
    assert 'id="demo-passes"' in page.text  # a replay says which pass, as the live page does

    replay = _sse_events(app_client.get(f"/demos/runs/{run_id}/events").text)
    live_rows = [data for name, data in _sse_events(live.text) if name == "measurement"]
    assert [data for name, data in replay if name == "measurement"] == live_rows
    assert replay[-1][0] == "done"
    assert any("Recorded run of" in data for _, data in replay)


def test_an_unknown_run_is_a_404(app_client: TestClient) -> None:
    assert app_client.get("/demos/runs/no-such-run").status_code == 404
    assert app_client.get("/demos/runs/no-such-run/events").status_code == 404


def test_demo_launches_are_rate_limited_per_address(app_client: TestClient) -> None:
    """The run panel only checks the limit; a stream that starts is what counts."""
    limits = app_client.app.state.limits
    saved = limits["demo"]
    # Its own name, so launches by earlier tests on this shared app do not count.
    limits["demo"] = SlidingWindow(app_client.app.state.engine, "demo-2", parse_rate("2/hour"))
    try:
        run = {"size_mib": 1, "iterations": 1}
        for _ in range(3):  # checking, or a refused stream, does not use the allowance up
            assert app_client.get("/demos/all-reduce/run", params=run).status_code == 200
            stream = app_client.get("/demos/all-reduce/stream", params={"size_mib": 0})
            assert stream.status_code == 422
        for _ in range(2):
            assert "Finished." in app_client.get("/demos/all-reduce/stream", params=run).text
        refused = app_client.get("/demos/all-reduce/run", params=run)
        assert refused.status_code == 429 and "Too many demo launches" in refused.text
        assert int(refused.headers["Retry-After"]) > 0
        assert app_client.get("/demos/all-reduce/stream", params=run).status_code == 429
    finally:
        limits["demo"] = saved


ZERO_PARAMS = {"width": 16, "layers": 1, "vocab": 10, "seq_len": 8, "batch": 1, "steps": 3}


def test_zero_stages_streams_four_strategies_and_a_summary_that_agrees(
    app_client: TestClient,
) -> None:
    response = app_client.get("/demos/ddp-vs-zero/stream", params=ZERO_PARAMS)
    assert response.status_code == 200
    events = _sse_events(response.text)
    assert [name for name, _ in events].count("measurement") == 12  # 4 strategies x 3 steps
    html = "".join(data for name, data in events if name == "message")
    assert len(re.findall(r'<tr data-strategy="zero3" data-step="2" data-rank="\d"', html)) == 2
    assert 'id="zero-memory-table"' in html and 'id="zero-traffic-table"' in html
    assert 'id="zero-peak-table"' in html
    assert "Loss curves coincide with DDP" in html
    assert "≠" not in html


def test_zero_stages_refuses_a_width_the_heads_do_not_divide(app_client: TestClient) -> None:
    panel = app_client.get("/demos/ddp-vs-zero/run", params={**ZERO_PARAMS, "width": "18"})
    assert panel.status_code == 422 and "Width" in panel.text
    stream = app_client.get("/demos/ddp-vs-zero/stream", params={**ZERO_PARAMS, "steps": 7})
    assert stream.status_code == 422
    assert stream.json()["detail"][0]["loc"] == ["query", "steps"]


def test_zero_stages_refuses_a_gpu_model_scale_on_a_cpu_worker(app_client: TestClient) -> None:
    panel = app_client.get("/demos/ddp-vs-zero/run", params={**ZERO_PARAMS, "model_scale": "8"})
    assert panel.status_code == 422
    assert "model scale 8 needs CUDA ranks; this worker runs on cpu" in panel.text
    shown = app_client.get("/demos/ddp-vs-zero/run", params={**ZERO_PARAMS, "model_scale": "1"})
    assert shown.status_code == 200 and 'id="zero-prediction"' in shown.text


# Passes once /tmp/po_messages2.json is merged into messages.po.
def test_a_device_refusal_is_said_in_the_readers_language(app_client: TestClient) -> None:
    from app.i18n import language, say
    from demos.specs.zero_stages import ZeroStagesParams

    refusal = ZeroStagesParams(**ZERO_PARAMS, model_scale=8).device_problem("cpu")
    assert refusal is not None
    with language("zh"):
        said = say(refusal)
    params = {**ZERO_PARAMS, "model_scale": "8", "lang": "zh"}
    try:
        panel = app_client.get("/demos/ddp-vs-zero/run", params=params)
    finally:
        app_client.cookies.delete("lang")  # ?lang= is remembered; the app is the package's
    assert panel.status_code == 422
    assert said != refusal and said in panel.text and "needs CUDA ranks" not in panel.text


def _finished_run(app_client: TestClient, path: str, params: dict) -> str:
    live = app_client.get(path, params=params)
    match = re.search(r'href="/demos/runs/([\w-]+)"', live.text)
    assert match, "no share link in the finished stream"
    return match.group(1)


def test_a_finished_runs_rows_download_as_csv_and_json(app_client: TestClient) -> None:
    run_id = _finished_run(app_client, "/demos/all-reduce/stream", {"size_mib": 1, "iterations": 2})
    response = app_client.get(f"/demos/runs/{run_id}/rows.csv")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    filename = f"shardlab-all-reduce-{run_id}-rows.csv"
    assert response.headers["content-disposition"] == f'attachment; filename="{filename}"'
    table = list(csv.reader(io.StringIO(response.text)))
    header, rows = table[0], table[1:]
    assert header[:3] == ["iteration", "rank", "correct"]
    assert len(rows) == 4  # 2 iterations x 2 ranks
    by_name = [dict(zip(header, row, strict=True)) for row in rows]
    assert [(r["iteration"], r["rank"]) for r in by_name] == [("0", "0"), ("0", "1"),
                                                               ("1", "0"), ("1", "1")]  # fmt: skip
    assert {r["logical_bytes"] for r in by_name} == {"1048576.0"}  # as measured, unformatted
    assert {r["payload_bytes"] for r in by_name} == {"1048576"}
    assert {r["correct"] for r in by_name} == {"true"}
    assert json.loads(by_name[0]["collectives"])[0]["kind"] == "all_reduce"

    listed = app_client.get(f"/demos/runs/{run_id}/rows.json")
    assert listed.status_code == 200
    assert listed.headers["content-type"] == "application/json"
    assert listed.headers["content-disposition"].endswith('-rows.json"')
    rows_json = listed.json()
    assert len(rows_json) == 4 and rows_json[0]["logical_bytes"] == 2**20
    assert [r["wire_bytes"] for r in rows_json] == [int(r["wire_bytes"]) for r in by_name]


def test_nested_measurements_become_dotted_columns(app_client: TestClient) -> None:
    run_id = _finished_run(app_client, "/demos/ddp-vs-zero/stream", ZERO_PARAMS)
    header, *rows = list(
        csv.reader(io.StringIO(app_client.get(f"/demos/runs/{run_id}/rows.csv").text))
    )
    assert header[:4] == ["iteration", "strategy", "step", "rank"]
    assert {"memory.params", "phases.backward.logical_bytes"} <= set(header)
    assert len(rows) == 24  # 4 strategies x 3 steps x 2 ranks


def test_rows_of_an_unknown_or_unfinished_run_are_a_404(app_client: TestClient) -> None:
    for suffix in ("rows.csv", "rows.json"):
        assert app_client.get(f"/demos/runs/no-such-run/{suffix}").status_code == 404
    running = start_run(app_client.app.state.engine, "all_reduce", {"size_mib": 1}, None)
    assert app_client.get(f"/demos/runs/{running}/rows.csv").status_code == 404
