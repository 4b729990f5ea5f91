"""The failures calculator over HTTP and the shell: same numbers everywhere, clear 422s."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calc.__main__ import main as cli
from app.calc.failures_query import FailuresQuery, failures_result

# Daly 2006's Figure 3 set-up: M = 24 h, C = 5 min, R = 10 min (one unit of MTBF 24 h).
DALY = {"units": 1, "rate": 24, "checkpoint_minutes": 5, "restart_minutes": 10}
SCENARIO = {"units": 16384, "rate": 50000, "window_hours": 24, "checkpoint_minutes": 5,
            "restart_minutes": 10, "interval_minutes": 30}  # fmt: skip
API = "/api/calc/failures"
FRAGMENT = "/calculators/failures/result"


def test_page_api_and_cli_give_the_same_numbers(client: TestClient, capsys) -> None:
    expected = failures_result(FailuresQuery(**SCENARIO))
    api = client.get(API, params=SCENARIO).json()
    assert api == json.loads(json.dumps(expected))
    args = ["failures", "--json"] + [f"--{k.replace('_', '-')}={v}" for k, v in SCENARIO.items()]
    assert cli(args) == 0
    assert json.loads(capsys.readouterr().out) == api
    page = client.get("/calculators/failures", params=SCENARIO).text
    assert f'id="job-probability">{api["job_window_probability"]:.4g}<' in page
    assert f'id="goodput">{100 * api["goodput_young"]:.1f} %<' in page
    assert f'id="goodput-interval">{100 * api["goodput_interval"]:.1f} %<' in page
    assert f'id="young">{api["young_interval_s"] / 60:.3g} min<' in page


def test_daly_figure_3_through_the_api(client: TestClient) -> None:
    api = client.get(API, params=DALY).json()
    assert api["young_interval_s"] == pytest.approx(120 * 60)
    assert round(api["daly_interval_s"] / 60) == 117  # Daly 2006, Figure 3
    assert api["goodput_young"] == pytest.approx(1 - 5 / 120 - 70 / 1440)


def test_rates_per_month_and_day(client: TestClient) -> None:
    month = client.get(API, params={"rate_kind": "per_unit_per_month", "rate": 0.01}).json()
    assert month["unit_mtbf_s"] == 72_000 * 3600
    day = client.get(API, params={"rate_kind": "per_unit_per_day", "rate": 0.5}).json()
    assert day["unit_mtbf_s"] == 48 * 3600


def test_llama3_record_is_shown(client: TestClient) -> None:
    page = client.get("/calculators/failures").text
    assert 'id="llama-job-mtbf">3.09 h<' in page
    assert 'id="llama-unit-mtbf">50,677 h<' in page
    assert "arXiv:2407.21783" in page and "Young 1974" in page and "Daly 2006" in page


def test_cli_table(capsys) -> None:
    assert cli(["failures", "--units", "1", "--rate", "24"]) == 0
    out = capsys.readouterr().out
    assert "Young interval (minutes)" in out and "120.00" in out and "116.69" in out


def test_fragment_shares_a_url_holding_every_input(client: TestClient) -> None:
    fragment = client.get(FRAGMENT, params=SCENARIO)
    url = fragment.headers["HX-Replace-Url"]
    for field in FailuresQuery.model_fields:
        assert f"{field}=" in url
    again = client.get(url.replace("/failures?", "/failures/result?"))
    assert again.text == fragment.text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"units": 0}, "GPUs (or nodes) n: must be at least 1"),
        ({"rate": 0}, "Failure rate: must be at least 1e-09"),
        ({"rate_kind": "weekly"}, "Failure rate given as"),
        ({"window_hours": "soon"}, "Window w (hours): must be a number"),
        ({"checkpoint_minutes": -1}, "Checkpoint time C (minutes): must be at least 1e-06"),
        ({"interval_minutes": 0}, "Your checkpoint interval (minutes): must be greater than 0"),
    ],
)
def test_bad_input_gets_an_inline_message(client: TestClient, params: dict, message: str) -> None:
    fragment = client.get(FRAGMENT, params={**SCENARIO, **params})
    assert fragment.status_code == 422
    assert message in fragment.text
    assert client.get(API, params={**SCENARIO, **params}).status_code == 422


fields = st.sampled_from(sorted(FailuresQuery.model_fields))
values = st.one_of(
    st.text(max_size=8),
    st.integers(-5, 10**7).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "nan", "inf", "1e-300", "1e400", "5e-324", "per_unit_per_day"]),
)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.dictionaries(fields, values, max_size=4))
def test_fuzzed_inputs_never_give_a_5xx(client: TestClient, changes: dict) -> None:
    for path in (API, FRAGMENT):
        response = client.get(path, params={**SCENARIO, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])
