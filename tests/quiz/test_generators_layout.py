"""The layout generator: deterministic, answered by the planner, each distractor wrong for the
reason it states (checked again against app.calc.planner, not against the generator's text)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from app.calc.planner import violations, why_not
from app.quiz.generators import GENERATORS
from app.quiz.generators.layout import MIN_SLOWDOWN, layout_options, layout_words
from app.quiz.layouts import SCENARIOS, layout_text, scenario_plan
from tests.quiz.generated_items import all_inputs, generated_items
from tests.utils import register

LAYOUT_ITEMS = [i for i in generated_items() if i["generator"] == "layout.pick_the_layout"]


def test_the_bank_has_a_layout_item_on_the_layout_card() -> None:
    assert [i["card"] for i in LAYOUT_ITEMS] == ["choosing-a-parallel-layout"]


@pytest.mark.parametrize("scenario", range(len(SCENARIOS)))
def test_each_option_is_what_the_planner_says_it_is(scenario: int) -> None:
    plan_ = scenario_plan(scenario)
    capacity = plan_.request.cluster.gpu_memory_bytes
    for seed in range(4):
        options = layout_options(scenario, seed)
        assert sorted(o.verdict for o in options) == [
            "best", "breaks_rule", "does_not_fit", "slower"
        ]  # fmt: skip
        assert len({layout_text(o.layout) for o in options}) == 4
        for option in options:
            if option.verdict == "best":
                assert plan_.best is not None and option.layout == plan_.best.layout
                continue
            why = why_not(plan_, option.layout)
            if option.verdict == "breaks_rule":
                assert option.rule in {r.rule for r in violations(plan_.request, option.layout)}
                assert why.cost is None
            elif option.verdict == "does_not_fit":
                assert why.cost is not None and not why.cost.fits
                assert option.over_bytes == pytest.approx(why.cost.memory_bytes - capacity)
                assert option.over_bytes > 0 and f"{option.over_bytes / 1e9:.1f} GB" in option.note
            else:
                assert why.cost is not None and why.cost.fits
                assert why.slowdown is not None and why.slowdown >= MIN_SLOWDOWN
                assert option.blame == why.blame and option.slowdown == why.slowdown


def test_the_answer_is_the_number_of_the_planners_best() -> None:
    solution = GENERATORS["layout.pick_the_layout"]({"scenario": 2, "seed": 0})
    options = layout_options(2, 0)
    best = scenario_plan(2).best
    assert best is not None
    assert options[int(solution.answer) - 1].layout == best.layout
    assert solution.options == ("Layout 1", "Layout 2", "Layout 3", "Layout 4")
    assert len(solution.option_notes) == 4
    listed = solution.prompt_fields["options"].splitlines()
    assert listed[int(solution.answer) - 1] == f"{int(solution.answer)}. {layout_text(best.layout)}"
    assert f"{best.step_time_s:.2f}" in solution.steps_latex[1]


def test_a_seed_always_gives_the_same_question_and_seeds_differ() -> None:
    generate = GENERATORS["layout.pick_the_layout"]
    first = generate({"scenario": 0, "seed": 3})
    assert generate({"scenario": 0, "seed": 3}) == first
    answers = {generate({"scenario": 0, "seed": s}).answer for s in range(8)}
    assert len(answers) > 1  # the best is not always in the same place


def test_every_combination_of_the_item_is_answerable() -> None:
    for item in LAYOUT_ITEMS:
        for inputs in all_inputs(item):
            solution = GENERATORS[item["generator"]](inputs)
            assert 1 <= solution.answer <= 4


def test_the_quiz_page_offers_the_layouts_and_explains_each(client: TestClient) -> None:
    # The real bank: the item is answered as the form sends it, and graded by the planner.
    register(client)
    solution = GENERATORS["layout.pick_the_layout"]({"scenario": 1, "seed": 2})
    form = {"item_id": "layout-pick-the-one-to-launch", "in_scenario": "1", "in_seed": "2"}
    right = client.post("/quiz/answer", data={**form, "answer": str(int(solution.answer))})
    assert right.status_code == 200 and "Correct." in right.text
    assert right.text.count('type="radio" name="answer"') == 4
    for note in ("Breaks a rule", "Does not fit", "Fits but slower", "The planner's best"):
        assert note in right.text
    wrong = 1 if solution.answer != 1 else 2
    answered = client.post("/quiz/answer", data={**form, "answer": str(wrong)})
    assert "Not quite." in answered.text
    assert f"You picked Layout {wrong}" in answered.text


def test_a_rule_breaker_with_both_shardings_shows_both() -> None:
    # The distractor "distributed optimizer with ZeRO-1" once read as a plain distributed
    # optimizer, a valid layout as fast as the answer: the item then had two right answers.
    best = scenario_plan(2).best
    assert best is not None
    both = replace(best.layout, zero_stage=1, distributed_optimizer=True)
    alone = replace(both, zero_stage=0)
    for words in (layout_text, layout_words):
        assert "distributed optimizer + ZeRO-1" in words(both)
        assert words(both) != words(alone)
