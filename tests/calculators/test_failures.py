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
# The checkpoint and series sections: Llama 3 405B's checkpoint on Tectonic's sustained 2 TB/s
# (arXiv:2407.21783, §3.3.1), and two kinds of unit.
CHECKPOINT = {"ckpt_params": 405e9, "ckpt_writers": 16384, "ckpt_write_gbps": 2000,
              "ckpt_host_gbps": 25}  # fmt: skip
SERIES = {"series_gpus": 1000, "series_gpu_rate": 50000, "series_hosts": 125,
          "series_host_rate": 25000}  # fmt: skip
EVERYTHING = {**SCENARIO, **CHECKPOINT, **SERIES, "series_network": 10,
              "series_network_rate": 1e5, "series_other": 1, "series_other_rate": 1e4}  # fmt: skip
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
    fragment = client.get(FRAGMENT, params=EVERYTHING)
    url = fragment.headers["HX-Replace-Url"]
    for field in FailuresQuery.model_fields:
        assert f"{field}=" in url
    again = client.get(url.replace("/failures?", "/failures/result?"))
    assert again.text == fragment.text


def test_checkpoint_section_through_api_page_and_cli(client: TestClient, capsys) -> None:
    # 405e9 x 14 B = 5.67 TB; / 2000 GB/s = 2.835 s; / 16,384 writers = 0.3461 GB each;
    # / 25 GB/s = 0.01384 s of blocking copy.
    api = client.get(API, params={**SCENARIO, **CHECKPOINT}).json()
    ck = api["checkpoint"]
    assert ck["total_bytes"] == pytest.approx(5.67e12) and ck["bytes_per_param"] == 14
    assert ck["write_s"] == pytest.approx(2.835)
    assert ck["async_blocking_s"] == pytest.approx(5.67e12 / 16384 / 25e9)
    page = client.get("/calculators/failures", params={**SCENARIO, **CHECKPOINT}).text
    assert 'id="ckpt-total">5.67 TB<' in page and 'id="ckpt-write">2.835 s<' in page
    assert 'id="ckpt-shard">0.3461 GB<' in page and 'id="ckpt-blocking">0.01384 s<' in page
    assert cli(["failures", "--ckpt-params", "1.008e12", "--ckpt-write-gbps", "273"]) == 0
    out = capsys.readouterr().out  # Megatron-LM's 1T model (arXiv:2104.04473, §5.10)
    assert "checkpoint (TB)" in out and "14.11" in out and "51.69" in out
    weights_only = client.get(API, params={"ckpt_params": 405e9, "ckpt_optimizer": "none",
                                           "ckpt_master_weights": "false"}).json()  # fmt: skip
    assert weights_only["checkpoint"]["total_bytes"] == pytest.approx(0.81e12)
    assert client.get(API, params=SCENARIO).json()["checkpoint"] is None


def test_series_section_and_the_llama3_split(client: TestClient) -> None:
    # 1000/50,000 + 125/25,000 = 0.025 per hour: a job MTBF of 40 h.
    api = client.get(API, params={**SCENARIO, **SERIES}).json()
    assert api["series"]["job_mtbf_s"] == pytest.approx(40 * 3600)
    assert [k["share"] for k in api["series"]["kinds"]] == pytest.approx([0.8, 0.2])
    afr = client.get(API, params={"series_rate_kind": "afr_percent", "series_gpus": 100,
                                  "series_gpu_rate": 10}).json()  # fmt: skip
    assert afr["series"]["job_mtbf_s"] == pytest.approx(876 * 3600)  # 87,600 h / 100
    # The page's link splits Llama 3's Table 5 into four kinds; the sum gives back 419.
    page = client.get("/calculators/failures").text
    link = page.split('id="llama-series"')[0].rsplit('href="', 1)[1].split('"')[0]
    shown = client.get(link.replace("&amp;", "&")).text
    assert 'id="series-mtbf">3.09 h<' in shown and 'id="series-expected">419.0<' in shown
    assert client.get(API, params={"series_gpus": 5}).status_code == 422


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"units": 0}, "GPUs (or nodes) n: must be at least 1"),
        ({"rate": 0}, "Failure rate: must be at least 1e-09"),
        ({"rate_kind": "weekly"}, "Failure rate given as"),
        ({"window_hours": "soon"}, "Window w (hours): must be a number"),
        ({"checkpoint_minutes": -1}, "Checkpoint time C (minutes): must be at least 1e-06"),
        ({"interval_minutes": 0}, "Your checkpoint interval (minutes): must be greater than 0"),
        ({"ckpt_params": 0}, "Parameters: must be at least 1"),
        ({"ckpt_write_gbps": 0}, "Aggregate write bandwidth (GB/s): must be at least 0.001"),
        ({"series_gpus": 8}, "Give both a count and a rate for a kind of unit, or neither"),
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
        response = client.get(path, params={**EVERYTHING, **changes})
        assert response.status_code in (200, 422), (path, changes, response.text[:300])


def test_the_new_quiz_generators_grade_by_the_calculators_numbers(client: TestClient) -> None:
    # app/quiz/generators/failures.py: checkpoint and series answers are the API's, in the
    # quiz's units (GB, s, h); 405e9 x 14 B = 5,670 GB; 1000/50,000 + 125/25,000 per h -> 40 h.
    from app.quiz.generators.failures import GENERATORS

    ck = GENERATORS["failures.checkpoint_total_gb"]({"ckpt_params": 405e9})
    assert ck.answer == pytest.approx(5670)
    write = GENERATORS["failures.checkpoint_write_seconds"]({**CHECKPOINT})
    api = client.get(API, params={**CHECKPOINT}).json()["checkpoint"]
    assert write.answer == pytest.approx(api["write_s"]) == pytest.approx(2.835)
    block = GENERATORS["failures.checkpoint_blocking_seconds"]({**CHECKPOINT})
    assert block.answer == pytest.approx(api["async_blocking_s"])
    sgd = GENERATORS["failures.checkpoint_total_gb"](
        {"ckpt_params": 1e9, "ckpt_optimizer": 1, "ckpt_master_weights": 0}
    )
    assert sgd.answer == pytest.approx(6)  # bf16 2 + one fp32 momentum buffer 4
    series = GENERATORS["failures.series_job_mtbf_hours"]({**SERIES})
    assert series.answer == pytest.approx(40)
    assert "0.025" in series.steps_latex[1]
