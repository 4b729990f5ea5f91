"""Formulas the reliability cards state in prose agree with the calculators behind their examples.

fault-tolerance, elastic-training, faulty-nodes-and-hangs and common-myths type formulas and
figures into their text; these tests read them back from the card files (so editing a card's
formula or figure breaks a test) and check them against app/calc on the cards' worked-example
inputs. torchrun-launch states no formula and has no test here.
"""

from __future__ import annotations

import math
import re

import pytest

from app.calc.failures import LLAMA3_405B, LLAMA3_405B_TABLE5, job_mtbf
from app.calc.failures_query import FailuresQuery, failures_result
from app.calc.pipeline import PipelineSetup, closed_form, simulate
from tests.cards.card_text import card_text, example_blocks, statement_of


def _stated_ml(pattern: str, text: str, what: str) -> re.Match[str]:
    return statement_of(text, pattern, what, re.MULTILINE)


# --- fault-tolerance -------------------------------------------------------------------------


def test_fault_tolerance_young_interval_and_waste_match_the_calculator() -> None:
    card = card_text("fault-tolerance")
    # Young's interval, tau* = sqrt(k C M), and the waste C/tau + (tau/d + R)/M, as typed.
    k = int(_stated_ml(r"\\tau\^\* = \\sqrt\{(\d+)CM\}", card, "Young's tau* = sqrt(2CM)").group(1))
    d = int(_stated_ml(r"\\frac\{C\}\{\\tau\} \+ \\frac\{\\tau/(\d+) \+ R\}\{M\}", card,
                    "the waste C/tau + (tau/2 + R)/M").group(1))  # fmt: skip
    example = example_blocks(card, "failures")[0]  # the Llama 3-scale job
    query = FailuresQuery.model_validate(example)
    result = failures_result(query)
    c, r, m = result["checkpoint_s"], result["restart_s"], result["job_mtbf_s"]
    assert m == pytest.approx(query.unit_mtbf_s() / query.units, rel=1e-12)  # M = M_u / n
    tau = math.sqrt(k * c * m)
    assert result["young_interval_s"] == pytest.approx(tau, rel=1e-12)
    waste = c / tau + (tau / d + r) / m
    assert result["goodput_young"] == pytest.approx(1 - waste, rel=1e-12)
    # The card's prose about this example: under an hour, several failures a day.
    assert tau < 3600
    assert 86400 / m > 3


def test_fault_tolerance_window_probability_and_the_dlrover_figure() -> None:
    card = card_text("fault-tolerance")
    _stated_ml(r"p = 1 - e\^\{-w/M_u\}", card, "p = 1 - e^{-w/M_u}")
    exponent = _stated_ml(r"P = 1 - \(1-p\)\^(\w)", card, "P = 1 - (1-p)^n").group(1)
    assert exponent == "n"
    ant = next(
        e for e in example_blocks(card, "failures") if e.get("rate_kind") == "per_unit_per_month"
    )
    query = FailuresQuery.model_validate(ant)
    result = failures_result(query)
    p = 1 - math.exp(-result["window_s"] / result["unit_mtbf_s"])
    assert result["unit_window_probability"] == pytest.approx(p, rel=1e-12)
    job = 1 - (1 - p) ** query.units
    assert result["job_window_probability"] == pytest.approx(job, rel=1e-9)
    # The card quotes DLRover's 93% and per-card 0.27% a day; both must agree with the model.
    stated = int(
        _stated_ml(r"within a day at (\d+)%", card, "DLRover's chance within a day").group(1)
    )
    assert round(100 * job) == stated
    per_day = float(
        _stated_ml(r"about ([\d.]+)% per card per day", card, "the per-card rate").group(1)
    )
    assert round(100 * p, 2) == pytest.approx(per_day, abs=0.005)
    assert job < 0.99  # likely, not "almost certain": the correction this card makes


# --- elastic-training ------------------------------------------------------------------------


def test_elastic_mtbf_falls_as_one_over_n_between_the_two_examples() -> None:
    card = card_text("elastic-training")
    small, large = (FailuresQuery.model_validate(e) for e in example_blocks(card, "failures"))
    fold = int(_stated_ml(r"job MTBF drops (\d+)-fold", card, "the MTBF ratio").group(1))
    ratio = failures_result(small)["job_mtbf_s"] / failures_result(large)["job_mtbf_s"]
    assert ratio == pytest.approx(large.units / small.units, rel=1e-12)
    assert ratio == pytest.approx(fold, rel=1e-12)
    assert job_mtbf(small.unit_mtbf_s(), small.units) == failures_result(small)["job_mtbf_s"]


# --- faulty-nodes-and-hangs ------------------------------------------------------------------


def test_faulty_nodes_table5_arithmetic_matches_the_calculators_table() -> None:
    card = card_text("faulty-nodes-and-hangs")
    total = LLAMA3_405B.interruptions
    assert sum(row[2] for row in LLAMA3_405B_TABLE5) == total
    count, denominator, percent = _stated_ml(r"\$(\d+)/(\d+) = ([\d.]+)\\%\$", card,
                                          "148/419 = 35.3%").groups()  # fmt: skip
    faulty_gpu = next(row for row in LLAMA3_405B_TABLE5 if row[0] == "Faulty GPU")
    assert (int(count), int(denominator)) == (faulty_gpu[2], total)
    assert round(100 * faulty_gpu[2] / total, 1) == float(percent)
    stated = dict(re.findall(r"\$(\d+)/419 = ([\d.]+)\\%\$", card.split("\n---\n", 1)[1]))
    gpu_rows = sum(row[2] for row in LLAMA3_405B_TABLE5 if row[1] == "GPU")
    assert str(gpu_rows) in stated, "the card no longer states the GPU rows' 268/419"
    assert round(100 * gpu_rows / total, 1) == float(stated[str(gpu_rows)])
    printed = round(sum(row[3] for row in LLAMA3_405B_TABLE5), 1)
    assert f"add up to {printed}%" in card


# --- common-myths ----------------------------------------------------------------------------


def _myth_row(card: str, number: int) -> str:
    return _stated_ml(rf"^\| {number} \|.*$", card, f"myth {number}").group(0)


@pytest.mark.parametrize(("p", "m"), [(4, 8), (8, 32), (16, 16)])
def test_common_myths_bubble_over_ideal_matches_the_pipeline_simulation(p: int, m: int) -> None:
    row = _myth_row(card_text("common-myths"), 8)
    assert "$(p-1)/m$ of the ideal compute time" in row
    assert "$(p-1)/(m+p-1)$" in row
    for schedule in ("gpipe", "1f1b"):
        sim = simulate(PipelineSetup(schedule, p, m))
        assert sim.bubble_over_ideal == pytest.approx((p - 1) / m, rel=1e-12)
        assert sim.bubble_fraction_of_total == pytest.approx((p - 1) / (m + p - 1), rel=1e-12)


def test_common_myths_zb_h1_cuts_the_bubble_to_a_third() -> None:
    row = _myth_row(card_text("common-myths"), 8)
    assert "ZB-H1 cuts the bubble to about a third" in row
    assert "ZB-H2 brings it near zero" in row  # not ZB-H1: the translators' correction
    p, m = 4, 8
    one_f_one_b = simulate(PipelineSetup("1f1b", p, m))
    zb_h1 = simulate(PipelineSetup("zb-h1", p, m))
    assert zb_h1.idle_time / one_f_one_b.idle_time == pytest.approx(1 / 3, rel=1e-12)
    assert closed_form(PipelineSetup("zb-h1", p, m)).over_ideal == pytest.approx(
        one_f_one_b.bubble_over_ideal / 3, rel=1e-12
    )
