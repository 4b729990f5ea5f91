"""The pipeline-schedule calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.pipeline import SCHEDULES, PipelineSetup, simulate
from app.calc.pipeline_query import PipelineQuery
from app.worked.pipeline import number, percent

SCENARIO = {"schedule": "interleaved", "pp": 4, "microbatches": 8, "virtual_stages": 2,
            "t_f": 1, "t_b": 1, "t_w": 1, "t_p2p": 0}  # fmt: skip


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = simulate(PipelineSetup("interleaved", 4, 8, 2))
    api = client.get("/api/calc/pipeline", params=SCENARIO).json()
    assert api["total_time"] == expected.total_time == 28.5
    assert api["bubble_over_ideal"] == 3 / 16  # (p - 1)/(v m)
    assert api["peak_in_flight"] == [5.5, 4.5, 3.5, 2.5]
    assert len(api["timeline"]) == 4 and len(api["timeline"][0]) == 2 * 8 * 2
    args = ["pipeline", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in SCENARIO.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/pipeline", params=SCENARIO).text
    assert re.search(r'id="total-time">28.5<', page)
    sim = page.split('data-measure="over_ideal"')[1]
    assert f'<td class="num sim">{percent(3 / 16)}</td>' in sim
    assert f'<td class="num closed">{percent(3 / 16)}</td>' in sim
    frac = page.split('data-measure="fraction_of_total"')[1]
    assert f'<td class="num sim">{percent(api["bubble_fraction_of_total"])}</td>' in frac
    for stage, n in enumerate(api["peak_in_flight"]):
        assert f'data-stage="{stage}">{n:g}<' in page
    for row in api["comparison"]:
        assert f'data-schedule="{row["schedule"]}"' in page
        assert number(row["total_time"]) in page


def test_cli_prints_a_text_gantt(capsys) -> None:
    assert cli(["pipeline", "--schedule", "gpipe", "--pp", "2", "--microbatches", "2"]) == 0
    out = capsys.readouterr().out
    assert "stage  0 F  |12......." in out and "stage  1 BW |...1122..|" in out
    assert "relative to ideal (idle / busy)" in out and "50.00 %" in out
    assert "fraction of total (idle / p·total)" in out and "33.33 %" in out


def test_page_shows_the_formula_with_numbers_and_source(client: TestClient) -> None:
    page = client.get("/calculators/pipeline", params={**SCENARIO, "schedule": "zb-h1"}).text
    assert r"t_{pb} = (4-1)(1 + 1 - 1) = 3" in page
    assert "arXiv:2401.10241" in page and "Section 2.1" in page
    assert 'id="closed-form-check"' in page and "agree" in page
    page = client.get("/calculators/pipeline", params={**SCENARIO, "t_p2p": 0.5}).text
    assert "leaves out the send/receive time" in page


def test_gantt_draws_every_block(client: TestClient) -> None:
    page = client.get("/calculators/pipeline", params={**SCENARIO, "schedule": "zb-h1"}).text
    big = page.split('id="gantt"')[1].split("</figure>")[0]
    # p = 4 stages x m = 8 micro-batches of F, B and W: 96 rectangles, each one "M...z".
    paths = re.findall(r' d="([^"]*)"', big)
    assert sum(d.count("M") for d in paths) == sum(d.count("z") for d in paths) == 4 * 8 * 3
    for kind in ("f", "b", "w"):
        assert f'class="block {kind} c0"' in big
    assert big.count('class="mb"') == 96  # wide enough: every micro-batch is numbered
    # The four small charts share one time axis, GPipe's (the longest step): same last tick.
    last_ticks = set()
    for schedule in SCHEDULES:
        small = page.split(f'id="gantt-{schedule}"')[1].split("</figure>")[0]
        last_ticks.add(re.findall(r'class="tick"[^>]*>([^<]*)<', small)[-1])
    assert last_ticks == {"30"}  # GPipe: (8 + 3)(1 + 2) = 33


def test_compare_can_be_switched_off(client: TestClient) -> None:
    page = client.get("/calculators/pipeline", params={**SCENARIO, "compare": "false"}).text
    assert 'id="gantt"' in page and 'id="gantt-gpipe"' not in page


def test_comparison_says_why_interleaved_cannot_run(client: TestClient) -> None:
    page = client.get(
        "/calculators/pipeline", params={**SCENARIO, "schedule": "1f1b", "microbatches": 6}
    ).text
    assert 'id="gantt-1f1b"' in page and 'id="gantt-interleaved"' not in page
    assert "multiple of the stages" in page


def test_fragment_shares_a_url_holding_every_input(client: TestClient) -> None:
    fragment = client.get(
        "/calculators/pipeline/result", params={**SCENARIO, "stage_times": "1,1,1,1.5"}
    )
    assert fragment.status_code == 200
    url = fragment.headers["HX-Replace-Url"]
    for field in PipelineQuery.model_fields:
        assert f"{field}=" in url
    again = client.get(url.replace("/pipeline?", "/pipeline/result?"))
    assert again.text == fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"microbatches": 6}, "multiple of the stages"),
        ({"virtual_stages": 1}, "at least 2 model chunks"),
        ({"pp": 1, "microbatches": 4}, "at least 2 pipeline stages"),
        ({"pp": 0}, "Pipeline stages p: must be at least 1"),
        ({"pp": 33}, "Pipeline stages p: must be at most 32"),
        ({"microbatches": 129}, "Micro-batches m: must be at most 128"),
        ({"t_f": 0}, "Forward time F: must be greater than 0"),
        ({"t_w": "soon"}, "Weight-gradient time W: must be a number"),
        ({"pp": 32, "microbatches": 128, "virtual_stages": 4}, "at most 8,192"),
        ({"schedule": "dualpipe"}, "Schedule:"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get("/calculators/pipeline/result", params={**SCENARIO, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    assert "HX-Replace-Url" not in fragment.headers
    api = client.get("/api/calc/pipeline", params={**SCENARIO, **params})
    assert api.status_code == 422


def test_cli_names_the_bad_option() -> None:
    with pytest.raises(SystemExit) as exc:
        cli(["pipeline", "--pp", "0"])
    assert exc.value.code == 2


def test_api_is_documented(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    operation = schema["paths"]["/api/calc/pipeline"]["get"]
    assert operation["tags"] == ["calculators"]
    assert "arXiv:2104.04473" in operation["description"]
    assert "/calculators/pipeline" not in schema["paths"]


fields = st.sampled_from(sorted(PipelineQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 200).map(str),
    st.sampled_from(
        [
            "true",
            "false",
            "",
            "nan",
            "inf",
            "-0",
            "1e400",
            "0.001",
            "1e6",
            "gpipe",
            "1f1b",
            "interleaved",
            "zb-h1",
        ]
    ),  # fmt: skip
)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in ("/api/calc/pipeline", "/calculators/pipeline/result"):
        response = client.get(path, params={**SCENARIO, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])


# Unequal stages: the LM head on the last stage (content/cards/pipeline-stage-imbalance.md).
SLOW_LAST = {"schedule": "1f1b", "pp": 4, "microbatches": 16, "stage_times": "8,8,8,10.41"}


def test_unequal_stages_agree_on_page_api_and_cli(client: TestClient, capsys) -> None:
    api = client.get("/api/calc/pipeline", params=SLOW_LAST).json()
    # (F + B + W)(34.41 + 15 x 10.41) = 3 x 190.56, simulated and in closed form
    assert api["total_time"] == pytest.approx(571.68)
    assert api["imbalanced_step"] == pytest.approx(571.68)
    assert api["stage_scale"] == [8, 8, 8, 10.41]
    assert api["closed_form"]["exact"] is False
    args = ["pipeline", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in SLOW_LAST.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/pipeline", params=SLOW_LAST).text
    assert f'id="total-time">{number(571.68)}<' in page
    assert 'id="stage-times"' in page and "8, 8, 8, 10.41" in page
    assert f'id="slowest-work">{number(499.68)}<' in page  # 16 x 3 x 10.41
    formula = page.split('id="imbalanced-step"')[1].split("</div>")[0]
    assert r"(34.41 + (16-1) \cdot 10.41) = 571.68" in formula
    assert "closed form assumes equal stages" in page
    assert 'value="8,8,8,10.41"' in page


def test_cli_prints_the_unequal_step(capsys) -> None:
    args = ["pipeline", "--pp", "2", "--microbatches", "2", "--stage-times", "1,2"]
    assert cli(args) == 0
    out = capsys.readouterr().out
    assert "unequal stages, relative times 1, 2" in out and "= 15, as simulated" in out


def test_a_slow_early_stage_shows_no_closed_step(client: TestClient) -> None:
    page = client.get(
        "/calculators/pipeline", params={**SLOW_LAST, "stage_times": "8,10.41,8,8"}
    ).text
    assert 'id="stage-times"' in page and 'id="imbalanced-step"' not in page


def test_equal_stages_show_no_stage_note(client: TestClient) -> None:
    page = client.get("/calculators/pipeline", params={**SLOW_LAST, "stage_times": ""}).text
    assert 'id="stage-times"' not in page and "agree" in page


@pytest.mark.parametrize(
    ("stage_times", "message"),
    [("1,1", "2 given for 4 stages"), ("1,x,1,1", "numbers separated by commas"),
     ("1,0,1,1", "must be positive")],
)  # fmt: skip
def test_bad_stage_times_get_an_inline_message(
    client: TestClient, stage_times: str, message: str
) -> None:
    params = {**SLOW_LAST, "stage_times": stage_times}
    fragment = client.get("/calculators/pipeline/result", params=params)
    assert fragment.status_code == 422 and message in fragment.text
    assert client.get("/api/calc/pipeline", params=params).status_code == 422
