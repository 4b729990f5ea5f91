"""Calibrating the planner to one's own runs: the JSON API and the planner page's form fit a
profile to a runs file, give each run's residual, refuse bad files with the reason (422), and
hand the profile to the planner, whose select lists every built-in profile."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.calc.calibration_runs import load_runs
from app.calc.performance import load_profile
from app.calc.profiles import built_in
from app.calc.published_runs import PROFILE_TITLES
from app.calculators.calibration_view import EXAMPLE_CSV, FITS_AT_ONCE, MAX_RUNS, running_fits
from tests.utils import make_settings, refresh_csrf

NAMES = ["8b-1node-dp8", "8b-1node-dp4-tp2", "8b-2nodes-dp16", "8b-2nodes-dp4-tp2-pp2"]
HEADER, *ROWS = EXAMPLE_CSV.splitlines()
TOO_MANY = "at most 50 runs can be calibrated at once, got 51"
# One run of the example as a JSON runs file's row.
JSON_RUN = {"name": "8b-json", "model": "llama3-8b", "gpu": "h100-sxm", "nodes": 1,
            "seq_len": 4096, "global_batch_sequences": 256, "dp": 8, "zero_stage": 1,
            "micro_batch": 1, "step_s": 12.9}  # fmt: skip


def _csv(*rows: str, header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


def _many_runs(n: int) -> str:
    row = ROWS[0]
    return _csv(*(row.replace("8b-1node-dp8", f"run-{i}", 1) for i in range(n)))


@pytest.fixture
def page_client(client: TestClient) -> TestClient:
    """A client that sends this session's CSRF token, as htmx does from <body>."""
    refresh_csrf(client)
    client.headers["HX-Request"] = "true"
    return client


def _upload(client: TestClient, text: str, filename: str = "runs.csv", **inputs: str):
    return client.post(
        "/calculators/planner/calibrate",
        files={"runs_file": (filename, text.encode())},
        data=inputs,
    )


# --- The JSON API ------------------------------------------------------------------------------


def test_a_csv_gives_each_runs_residual_and_a_profile_that_loads(client: TestClient) -> None:
    answer = client.post("/api/calc/calibrate", json={"csv": EXAMPLE_CSV})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert [r["name"] for r in data["runs"]] == NAMES
    measured = [float(row.split(",")[-2]) for row in ROWS]
    assert [r["measured_step_s"] for r in data["runs"]] == measured
    assert all(r["held_out_step_s"] is not None for r in data["runs"])  # 4 runs: left out
    assert data["cross_validated"] and data["held_out_mean_error"] >= data["mean_error"]
    assert data["runs"][0]["measured_memory_bytes"] == 74.1e9
    profile = load_profile(data["profile_json"])
    assert profile.name == data["profile"]["name"] == "calibrated"
    assert profile.values() == {k: v for k, v in data["profile"].items() if k != "name"}


def test_a_json_runs_file_gives_each_runs_residual(client: TestClient) -> None:
    runs = [dict(JSON_RUN), {**JSON_RUN, "name": "8b-json-2", "nodes": 2, "dp": 16,
                             "global_batch_sequences": 512, "step_s": 13.4}]  # fmt: skip
    answer = client.post("/api/calc/calibrate", json={"runs": runs})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert [r["name"] for r in data["runs"]] == ["8b-json", "8b-json-2"]
    # Two runs: too few to leave one out.
    assert not data["cross_validated"] and data["held_out_mean_error"] is None
    assert data["memory_mean_error"] is None
    load_profile(data["profile_json"])


def test_the_planner_takes_the_returned_profile(client: TestClient) -> None:
    profile = client.post("/api/calc/calibrate", json={"csv": EXAMPLE_CSV}).json()["profile_json"]
    plan = client.get("/api/calc/planner", params={"preset": "llama3-8b", "profile": profile})
    assert plan.status_code == 200, plan.text
    assert plan.json()["profile"]["name"] == "calibrated"
    assert plan.json()["profile"]["values"] == load_profile(profile).values()


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"csv": "a sentence, not a runs file\nof runs"}, "run 1: unknown fields"),
        ({"csv": _csv(ROWS[0] + ",x", header=HEADER + ",bogus")},
         "run 1 (8b-1node-dp8): unknown fields bogus"),
        ({"csv": _csv(ROWS[0].replace(",4096,", ",,"))},
         "run 1 (8b-1node-dp8): seq_len is missing"),
        ({"csv": _csv(ROWS[0].replace(",8,1,1,1,1,", ",8,3,1,1,1,"))},
         "run 1 (8b-1node-dp8): the layout is not valid"),
        ({"runs": [{**JSON_RUN, "tp": 3}]},
         "run 1 (8b-json): the layout is not valid (world_size: dp*tp*pp*cp = 24, not 8 GPUs"),
        ({"runs": [{**JSON_RUN, "tp": 3}]}, "tp_divides_heads: tp=3 does not divide 32 attention"),
        ({"runs": [JSON_RUN] * (MAX_RUNS + 1)}, TOO_MANY),
        ({"csv": _many_runs(MAX_RUNS + 1)}, TOO_MANY),
        ({"csv": _csv(*ROWS[:1]) + "#" * 200_000}, "the runs file is over 200 kB"),
        ({"csv": HEADER + "\n" + "x" * 150_000}, "the runs file is not valid CSV: field larger"),
        ({"csv": EXAMPLE_CSV, "runs": [JSON_RUN]}, "give the runs either as `runs`"),
        ({}, "give the runs either as `runs`"),
    ],
)  # fmt: skip
def test_a_bad_runs_file_is_refused_with_the_reason(
    client: TestClient, body: dict, problem: str
) -> None:
    answer = client.post("/api/calc/calibrate", json=body)
    assert answer.status_code == 422
    assert problem in answer.json()["detail"]


def test_a_long_name_is_cut_in_the_message(client: TestClient) -> None:
    answer = client.post("/api/calc/calibrate", json={"runs": [{"name": "n" * 5000}]})
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert detail.startswith("run 1 (nnn") and detail.endswith("…") and len(detail) == 600


def test_fits_are_rate_limited_per_address(tmp_path: Path) -> None:
    from app.main import create_app

    settings = make_settings(tmp_path / "data", calibrate_rate_limit="2/minute")
    with TestClient(create_app(settings)) as client:
        for _ in range(2):
            assert client.post("/api/calc/calibrate", json={"csv": "x"}).status_code == 422
        refused = client.post("/api/calc/calibrate", json={"csv": EXAMPLE_CSV})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert refused.json()["detail"].startswith("Too many calibrations from here")
        refresh_csrf(client)
        page = _upload(client, EXAMPLE_CSV)
        assert page.status_code == 429 and "Too many calibrations" in page.text


def test_a_fit_beyond_those_running_at_once_is_told_to_try_again(page_client: TestClient) -> None:
    for _ in range(FITS_AT_ONCE):
        assert running_fits.acquire(blocking=False)
    try:
        api = page_client.post("/api/calc/calibrate", json={"csv": EXAMPLE_CSV})
        page = _upload(page_client, EXAMPLE_CSV)
    finally:
        for _ in range(FITS_AT_ONCE):
            running_fits.release()
    assert api.status_code == 503 and "try again" in api.json()["detail"]
    assert page.status_code == 503 and 'id="calibration-error"' in page.text


# --- The planner page ------------------------------------------------------------------------


def test_the_example_runs_file_downloads_and_loads(client: TestClient) -> None:
    example = client.get("/calculators/planner/calibration-example.csv")
    assert example.status_code == 200 and example.headers["content-type"].startswith("text/csv")
    assert "attachment" in example.headers["content-disposition"]
    assert [run.name for run in load_runs(example.text, "csv")] == NAMES
    page = client.get("/calculators/planner").text
    assert 'href="/calculators/planner/calibration-example.csv"' in page


def test_an_uploaded_file_shows_each_run_the_summary_and_a_link_to_plan(
    page_client: TestClient,
) -> None:
    inputs = {"preset": "llama3-70b", "nodes": "4", "profile": "zero-a100"}
    fragment = _upload(page_client, EXAMPLE_CSV, **inputs)
    assert fragment.status_code == 200, fragment.text
    text = fragment.text
    rows = re.findall(r'<tr data-run="([^"]+)">', text)
    assert rows == NAMES
    summary = re.search(r'id="calibration-summary">(.*?)</p>', text, re.S).group(1)
    assert "Fitted to 4 runs" in summary and "leave-one-out" in summary
    assert "Peak memory off by" in summary
    assert 'id="cross-validation-skipped"' not in text
    assert len(re.findall(r'<tr data-parameter="', text)) == 14
    # The link keeps the planner's inputs and carries the fitted profile in place of theirs.
    href = html.unescape(re.search(r'id="plan-with-profile" href="([^"]+)"', text).group(1))
    planned = page_client.get(href)
    assert planned.status_code == 200
    assert "preset=llama3-70b" in href and "nodes=4" in href
    line = re.search(r'id="planner-profile"[^>]*>(.*?)</p>', planned.text, re.S).group(1)
    assert "your calibrated profile <strong>calibrated</strong>" in line
    assert "fitted to 4 measured runs: 8b-1node-dp8" in line
    # The select keeps the profile: "your calibrated profile" is chosen.
    select = re.search(r'<select name="profile".*?</select>', planned.text, re.S).group(0)
    chosen = re.search(r'<option value="([^"]*)" selected>([^<]*)</option>', select)
    assert chosen.group(2) == "your calibrated profile"
    assert json.loads(html.unescape(chosen.group(1)))["name"] == "calibrated"


def test_pasted_runs_are_fitted_too(page_client: TestClient) -> None:
    fragment = page_client.post(
        "/calculators/planner/calibrate", data={"runs_text": _csv(*ROWS[:2])}
    )
    assert fragment.status_code == 200
    assert re.findall(r'<tr data-run="([^"]+)">', fragment.text) == NAMES[:2]
    assert "Leave-one-out needs at least 3 runs" in fragment.text


def test_leave_one_out_is_skipped_past_its_bound_and_the_page_says_so(
    page_client: TestClient,
) -> None:
    fragment = _upload(page_client, _many_runs(11))
    assert fragment.status_code == 200
    assert len(re.findall(r'<tr data-run="', fragment.text)) == 11
    assert 'id="cross-validation-skipped"' in fragment.text
    assert "runs for at most 10 runs" in fragment.text


@pytest.mark.parametrize(
    ("filename", "content", "problem"),
    [
        ("runs.csv", b"\xff\xfe\x00binary", "the runs file is not UTF-8 text"),
        ("runs.json", b"{not json", "the runs file is not valid JSON"),
        ("runs.csv", _csv(ROWS[0], header=HEADER.replace("seq_len", "seqlen")).encode(),
         "unknown fields seqlen"),
        ("runs.csv", _many_runs(MAX_RUNS + 1).encode(), "at most 50 runs"),
        ("runs.csv", b"x" * 200_001, "the runs file is over 200 kB"),
    ],
)  # fmt: skip
def test_a_bad_file_shows_the_reason_inline(
    page_client: TestClient, filename: str, content: bytes, problem: str
) -> None:
    fragment = page_client.post(
        "/calculators/planner/calibrate", files={"runs_file": (filename, content)}
    )
    assert fragment.status_code == 422
    error = re.search(r'id="calibration-error">(.*?)</div>', fragment.text, re.S).group(1)
    assert problem in html.unescape(error)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (_csv(ROWS[0].replace(",4096,", ",,")), "第 1 个运行（8b-1node-dp8）：缺少 seq_len"),
        (_csv(ROWS[0].replace(",8,1,1,1,1,", ",8,3,1,1,1,")),
         "第 1 个运行（8b-1node-dp8）：并行配置（layout）不合法"),
        (HEADER + "\n", "运行记录文件里没有任何运行"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_in_chinese(
    page_client: TestClient, content: str, problem: str
) -> None:
    fragment = page_client.post(
        "/calculators/planner/calibrate?lang=zh", files={"runs_file": ("runs.csv", content)}
    )
    assert fragment.status_code == 422
    error = html.unescape(
        re.search(r'id="calibration-error">(.*?)</div>', fragment.text, re.S).group(1)
    )
    assert problem in error
    assert "run 1" not in error and "missing" not in error


def test_nothing_to_fit_is_said(page_client: TestClient) -> None:
    fragment = page_client.post("/calculators/planner/calibrate", data={"runs_text": " "})
    assert fragment.status_code == 422 and "choose a runs file or paste one" in fragment.text


def test_without_script_the_fit_comes_back_in_the_whole_page(client: TestClient) -> None:
    refresh_csrf(client)
    page = _upload(client, EXAMPLE_CSV)
    assert page.status_code == 200
    assert '<details class="panel" id="calibrate" open>' in page.text
    assert 'id="planner-form"' in page.text and 'id="calibration-runs"' in page.text


def test_the_fit_needs_the_sessions_csrf_token(client: TestClient) -> None:
    assert _upload(client, EXAMPLE_CSV).status_code == 403


def test_the_profile_select_lists_every_built_in_profile(client: TestClient) -> None:
    page = client.get("/calculators/planner").text
    select = re.search(r'<select name="profile".*?</select>', page, re.S).group(0)
    options = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select)
    names = [text.split(":")[0] for _, text in options]
    assert sorted(names) == sorted(built_in()) and names[0] == "published"
    assert options[0][0] == ""  # the default: a query that names none gets it
    assert 'value="zero-a100" title=' in select


def test_choosing_a_profile_changes_the_results_profile_line(client: TestClient) -> None:
    def line(**inputs: str) -> str:
        fragment = client.get("/calculators/planner/result", params=inputs)
        assert fragment.status_code == 200
        return re.search(r'id="planner-profile"[^>]*>(.*?)</p>', fragment.text, re.S).group(1)

    default = line()
    assert "<strong>published</strong>" in default
    zero = client.get("/calculators/planner/result", params={"profile": "zero-a100"})
    assert "profile=zero-a100" in zero.headers["HX-Replace-Url"]
    chosen = line(profile="zero-a100")
    assert "<strong>zero-a100</strong>" in chosen
    assert PROFILE_TITLES["zero-a100"] in html.unescape(chosen)
    assert chosen != default


def test_a_bad_profile_is_refused_in_the_form(client: TestClient) -> None:
    page = client.get("/calculators/planner", params={"profile": "fastest"})
    assert page.status_code == 422
    assert "Performance profile" in page.text and "neither a built-in profile" in page.text


def test_a_calibrated_fit_in_chinese(page_client: TestClient) -> None:
    fragment = page_client.post(
        "/calculators/planner/calibrate?lang=zh",
        files={"runs_file": ("runs.csv", _many_runs(MAX_RUNS + 1).encode())},
    )
    assert fragment.status_code == 422
    assert "at most" not in fragment.text and "51" in fragment.text
    page = page_client.get("/calculators/planner", params={"lang": "zh"}).text
    assert "Performance profile" not in page and "Calibrate to your runs" not in page
