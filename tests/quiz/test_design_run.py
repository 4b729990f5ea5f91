"""Mock interview, "design the run": a layout scored against the planner; full marks for the
best, zero naming the rule for a broken one, partial naming the term for a slower one."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from app.calc.planner import Layout
from app.i18n import language, say
from app.quiz.design_run import DesignAnswer, score_design
from app.quiz.layouts import scenario_plan
from tests.utils import register

SCENARIO = 2  # Llama 3 70B on 64 H100s at 8K


def _answer(layout: Layout, scenario: int = SCENARIO) -> DesignAnswer:
    zero = "dist-opt" if layout.distributed_optimizer else str(layout.zero_stage)
    return DesignAnswer(
        scenario=scenario, dp=layout.dp, tp=layout.tp, pp=layout.pp, cp=layout.cp, ep=layout.ep,
        zero=zero, recompute=layout.recompute, micro_batch=layout.micro_batch,
        schedule=layout.schedule, virtual_stages=layout.virtual_stages,
    )  # fmt: skip


def test_the_planners_best_scores_full_marks() -> None:
    best = scenario_plan(SCENARIO).best
    assert best is not None
    result = score_design(_answer(best.layout))
    assert (result.score, result.verdict, result.slowdown) == (1.0, "full", 1.0)


def test_a_rule_breaking_layout_scores_zero_and_names_the_rule() -> None:
    result = score_design(_answer(Layout(dp=4, tp=16, zero_stage=1)))
    assert (result.score, result.verdict) == (0.0, "breaks_rule")
    assert "tp_within_node" in {r.rule for r in result.rules}
    assert "tp_within_node" in result.explanation


def test_a_layout_that_does_not_fit_scores_zero_and_says_by_how_much() -> None:
    result = score_design(_answer(Layout(dp=64)))
    assert (result.score, result.verdict, result.blame) == (0.0, "does_not_fit", "memory")
    assert result.cost is not None
    over_gb = (result.cost.memory_bytes - 81559 * 2**20) / 1e9
    assert f"{over_gb:.1f} GB more" in result.explanation


def test_a_slower_layout_scores_partial_and_blames_a_term() -> None:
    # The textbook DP 4 x TP 8 x PP 2: it fits, but the planner counts its TP all-reduces.
    result = score_design(_answer(Layout(dp=4, tp=8, pp=2, zero_stage=1)))
    best = scenario_plan(SCENARIO).best
    assert best is not None and result.cost is not None
    assert result.verdict == "partial" and result.blame == "exposed_tp"
    assert result.score == pytest.approx(best.step_time_s / result.cost.step_time_s)
    assert 0 < result.score < 1 / 1.05
    assert "exposed TP communication" in result.explanation


def test_a_step_time_verdict_says_how_uncertain_the_planner_is() -> None:
    # The default profile's errors on published runs held out of its fit, as stored with it.
    profile = scenario_plan(SCENARIO).request.profile
    assert profile.name == "published" and profile.held_out_worst_error is not None
    mean, worst = f"{profile.held_out_mean_error:.1%}", f"{profile.held_out_worst_error:.1%}"
    for layout in (Layout(dp=4, tp=8, pp=2, zero_stage=1), scenario_plan(SCENARIO).best.layout):
        text = score_design(_answer(layout)).explanation
        assert f"off by {mean} on average, {worst} at worst" in text
    # A verdict that compares no step times says nothing of them.
    assert "off by" not in score_design(_answer(Layout(dp=64))).explanation


@pytest.mark.parametrize(
    ("fields", "verdict", "named"),
    [
        ({"dp": "4", "tp": "16", "zero": "1"}, "breaks_rule", "tp_within_node"),
        ({"dp": "4", "tp": "8", "pp": "2", "zero": "1"}, "partial", "exposed TP communication"),
    ],
)
def test_the_page_scores_a_submitted_layout(
    quiz_client: TestClient, fields: dict[str, str], verdict: str, named: str
) -> None:
    register(quiz_client)
    page = quiz_client.get("/mock/design", params={"scenario": SCENARIO})
    assert page.status_code == 200 and "Llama 3 70B" in page.text
    scored = quiz_client.post("/mock/design", data={"scenario": str(SCENARIO), **fields})
    assert scored.status_code == 200
    assert f'data-verdict="{verdict}"' in scored.text and named in scored.text
    assert re.search(r'id="design-score">\d+ / 100<', scored.text)


def test_a_bad_form_is_a_422_with_the_field_named(quiz_client: TestClient) -> None:
    register(quiz_client)
    bad = quiz_client.post("/mock/design", data={"scenario": "2", "dp": "0", "tp": "x"})
    assert bad.status_code == 422
    assert "DP: must be at least 1" in bad.text and "TP: must be a whole number" in bad.text


def test_the_mock_start_page_links_to_design_the_run(quiz_client: TestClient) -> None:
    register(quiz_client)
    assert 'href="/mock/design"' in quiz_client.get("/mock").text


def test_the_score_page_links_the_layout_to_the_planner_page(quiz_client: TestClient) -> None:
    register(quiz_client)
    fields = {"scenario": str(SCENARIO), "dp": "4", "tp": "8", "pp": "2", "zero": "1"}
    page = quiz_client.post("/mock/design", data=fields).text
    link = re.search(r'id="design-in-planner"', page) and re.search(
        r'href="(/calculators/planner\?[^"]+)" id="design-in-planner"', page
    )
    assert link is not None
    url = link.group(1).replace("&amp;", "&")
    assert "preset=llama3-70b" in url and "tp=8" in url and "pp=2" in url
    assert quiz_client.get(url).status_code == 200


@pytest.mark.parametrize(
    ("fields", "verdict", "english"),
    [
        ({"dp": "4", "tp": "16", "zero": "1"}, "breaks_rule", ("breaks a rule", "does not divide")),
        ({"dp": "4", "tp": "8", "pp": "2", "zero": "1"}, "partial", ("Partial", "exposed TP")),
        ({"dp": "64"}, "does_not_fit", ("does not fit", "a GPU has")),
    ],
)
def test_the_score_is_explained_in_the_readers_language(
    quiz_client: TestClient, fields: dict[str, str], verdict: str, english: tuple[str, str]
) -> None:
    """The same verdict and score in both languages; the words, the planner's reasons among
    them, in the reader's."""
    register(quiz_client)
    form = {"scenario": str(SCENARIO), **fields}
    result = score_design(DesignAnswer.model_validate(form))
    with language("zh"):
        said = say(result.explanation)
    assert said != result.explanation
    page = quiz_client.post("/mock/design?lang=zh", data=form).text
    assert f'data-verdict="{verdict}"' in page and str(escape(said)) in page
    assert not any(words in page for words in english)
    assert f'id="design-score">{result.score * 100:.0f} / 100<' in page
    shown = quiz_client.post("/mock/design?lang=en", data=form).text
    assert str(escape(result.explanation)) in shown
