"""System-design rounds (issue #27): the bank loads in both languages, and a sheet is graded
term by term against the planner and the calculators, each checked here from its own calculator
call, not from the sheet's code."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml

from app.calc.checkpoint_size import checkpoint_bytes
from app.calc.failures import YEAR, daly_interval, goodput, young_interval
from app.calc.model import PRESETS, count_params
from app.calc.planner import Layout
from app.cards.glossary import Term, edition_wording_problems
from app.quiz.design_keys import best_serving_key, filled, round_figures
from app.quiz.design_rounds import FIGURES, DesignRound, DesignRoundError, DesignRounds
from app.quiz.design_sheet import ServingSheet, TrainingSheet, grade_sheet
from app.quiz.layouts import plan_for

CONTENT = Path(__file__).parents[2] / "content"
BANK = DesignRounds.load(CONTENT / "design", (p.stem for p in (CONTENT / "cards").glob("*.md")))
TRAINING = [r for r in BANK.all() if r.kind == "training"]
SERVING = [r for r in BANK.all() if r.kind == "serving"]


def _round(round_id: str) -> DesignRound:
    round_ = BANK.get(round_id)
    assert round_ is not None
    return round_


def _layout_fields(layout: Layout) -> dict[str, object]:
    zero = "dist-opt" if layout.distributed_optimizer else str(layout.zero_stage)
    return {"dp": layout.dp, "tp": layout.tp, "pp": layout.pp, "cp": layout.cp, "ep": layout.ep,
            "zero": zero, "recompute": layout.recompute, "micro_batch": layout.micro_batch,
            "schedule": layout.schedule, "virtual_stages": layout.virtual_stages}  # fmt: skip


def _right_training_sheet(round_: DesignRound, **change: object) -> TrainingSheet:
    """The planner's best layout and its figures, Young's interval, every point ticked."""
    t = round_.training
    assert t is not None
    best = plan_for(t.scenario, t.token_budget).best
    assert best is not None
    gpu_hours = best.days * 24 * 8 * t.nodes
    size = checkpoint_bytes(count_params(PRESETS[t.model]).total).total
    young = young_interval(size / (t.checkpoint_gb_per_s * 1e9),
                           YEAR / (t.node_afr_percent / 100) / t.nodes)  # fmt: skip
    fields = _layout_fields(best.layout) | {
        "memory_gb": best.memory_bytes / 1e9, "step_s": best.step_time_s, "days": best.days,
        "meets_deadline": "yes" if best.days <= t.deadline_days else "no",
        "within_budget": "yes" if gpu_hours <= t.budget_gpu_hours else "no",
        "checkpoint_min": young / 60, "watch": list(range(len(round_.watch))),
    }  # fmt: skip
    return TrainingSheet.model_validate(fields | change)


def _right_serving_sheet(round_: DesignRound, **change: object) -> ServingSheet:
    s = round_.serving
    assert s is not None
    key = best_serving_key(s)
    assert key.memory is not None
    fields = {
        "tp": key.tp, "replicas": key.replicas,
        "weights_gb": key.memory.term("weights").bytes_ / 1e9,
        "kv_gb": key.memory.term("kv_cache").bytes_ / 1e9, "fits": "yes",
        "decode_ms": key.decode_s * 1e3, "watch": list(range(len(round_.watch))),
    }  # fmt: skip
    return ServingSheet.model_validate(fields | change)


def _grades(result: object) -> dict[str, str]:
    return {t.term: t.grade for t in result.terms}  # type: ignore[attr-defined]


def test_at_least_twelve_rounds_of_both_kinds_dense_and_moe_in_both_languages() -> None:
    assert len(BANK.all()) >= 12 and len(TRAINING) >= 8 and len(SERVING) >= 4
    for group in (TRAINING, SERVING):
        experts = {PRESETS[r.model_preset].experts > 1 for r in group}
        assert experts == {True, False}
    assert {r.training.accelerator for r in TRAINING if r.training} >= {"h100-sxm", "a100-80gb-sxm"}
    for round_ in BANK.all():
        assert set(round_.editions) == {"zh"}, round_.id
        assert round_.words("zh").model_answer != round_.model_answer


def test_a_round_naming_an_unknown_preset_card_or_figure_is_refused(tmp_path: Path) -> None:
    source = yaml.safe_load((CONTENT / "design" / "llama3-8b-chat-h100.yaml").read_text())
    for change, named in [({"card": "no-such-card"}, "no card"),
                          ({"serving": {**source["serving"], "model": "gpt-9"}}, "gpt-9"),
                          ({"brief": "{no_such_figure}"}, "no_such_figure"),
                          ({"title": "{decode_ms}"}, "needs a plan")]:  # fmt: skip
        folder = tmp_path / named.replace(" ", "-")
        folder.mkdir()
        (folder / "llama3-8b-chat-h100.yaml").write_text(yaml.safe_dump(source | change))
        with pytest.raises(DesignRoundError, match=named):
            DesignRounds.load(folder, ["inference-kv-cache"])


@pytest.mark.parametrize("round_", TRAINING, ids=lambda r: r.id)
def test_the_right_training_sheet_scores_full_marks(round_: DesignRound) -> None:
    result = grade_sheet(round_, _right_training_sheet(round_))
    assert set(_grades(result).values()) == {"pass"}
    assert (result.score, result.verdict, result.rules) == (1.0, "full", ())


@pytest.mark.parametrize("round_", SERVING, ids=lambda r: r.id)
def test_the_right_serving_sheet_scores_full_marks(round_: DesignRound) -> None:
    result = grade_sheet(round_, _right_serving_sheet(round_))
    assert set(_grades(result).values()) == {"pass"}
    assert (result.score, result.verdict) == (1.0, "full")


@pytest.mark.parametrize("term", ["memory_gb", "step_s", "days"])
def test_a_training_figure_off_by_two_fails_that_term_only(term: str) -> None:
    round_ = _round("llama3-70b-h100-3d")
    right = _right_training_sheet(round_)
    for factor in (2.0, 0.5):
        grades = _grades(grade_sheet(round_, right.model_copy(
            update={term: getattr(right, term) * factor})))  # fmt: skip
        assert grades[term] == "fail"
        assert [t for t, g in grades.items() if g != "pass"] == [term]
    # 25% off the step is half marks: full within 20%, half within 40%.
    near = grade_sheet(round_, right.model_copy(update={"step_s": right.step_s * 1.25}))
    assert _grades(near)["step_s"] == "partial"


@pytest.mark.parametrize("term", ["weights_gb", "kv_gb", "decode_ms"])
def test_a_serving_figure_off_by_two_fails(term: str) -> None:
    round_ = _round("llama3-70b-chat-h100")
    right = _right_serving_sheet(round_)
    result = grade_sheet(round_, right.model_copy(update={term: getattr(right, term) * 2}))
    assert _grades(result)[term] == "fail" and result.verdict == "partial"


def test_a_layout_breaking_a_rule_scores_zero_on_the_layout_and_names_the_rule() -> None:
    round_ = _round("llama3-8b-h100-pretrain")
    sheet = _right_training_sheet(round_, dp=1, tp=16, pp=1, micro_batch=1, virtual_stages=1)
    result = grade_sheet(round_, sheet)
    [layout] = [t for t in result.terms if t.term == "layout"]
    assert (layout.score, layout.grade, result.verdict) == (0.0, "fail", "breaks_rule")
    assert "tp_within_node" in result.rules and "tp_within_node" in layout.why


def test_a_tp_that_does_not_split_the_heads_fails_and_says_why() -> None:
    round_ = _round("llama3-70b-chat-h100")  # 8 KV heads: TP 3 divides neither way
    result = grade_sheet(round_, _right_serving_sheet(round_, tp=3))
    [tp] = [t for t in result.terms if t.term == "tp"]
    assert (tp.grade, result.verdict) == ("fail", "breaks_rule") and "heads" in tp.why


def test_a_larger_tp_that_fits_is_half_marks() -> None:
    round_ = _round("llama3-8b-chat-h100")  # TP 1 fits: TP 2 halves the replicas
    result = grade_sheet(round_, _right_serving_sheet(round_, tp=2, replicas=4))
    assert _grades(result)["tp"] == "partial" and _grades(result)["replicas"] == "pass"


def test_the_checkpoint_interval_is_judged_by_goodput_against_young_and_daly() -> None:
    """Young's and Daly's intervals from failures.py, from the round's inputs by hand: the job
    fails when any of its nodes does (M = node MTBF / nodes); a checkpoint of 14 bytes per
    parameter (bf16 weights, fp32 master, two fp32 moments) is written at the storage's rate."""
    round_ = _round("qwen2-72b-h100-failures")
    t = round_.training
    assert t is not None
    mtbf = YEAR / (t.node_afr_percent / 100) / t.nodes
    write = count_params(PRESETS[t.model]).total * 14 / (t.checkpoint_gb_per_s * 1e9)
    restart = t.restart_minutes * 60
    young, daly = young_interval(write, mtbf), daly_interval(write, mtbf)
    assert young == pytest.approx(math.sqrt(2 * write * mtbf))
    best_waste = 1 - goodput(young, write, restart, mtbf)
    for interval_s, grade in [(young, "pass"), (daly, "pass"), (young * 1.5, "pass"),
                              (young * 2.5, "partial"), (young * 5, "fail"),
                              (young / 5, "fail")]:  # fmt: skip
        waste = 1 - goodput(interval_s, write, restart, mtbf)
        expected = (
            "pass"
            if waste <= 1.1 * best_waste
            else "partial"
            if waste <= 1.5 * best_waste
            else "fail"
        )
        assert expected == grade, interval_s
        sheet = _right_training_sheet(round_, checkpoint_min=interval_s / 60)
        [term] = [x for x in grade_sheet(round_, sheet).terms if x.term == "checkpoint_min"]
        assert term.grade == grade, interval_s
        assert term.expected == f"{young / 60:,.0f}"


# A number in prose that is not a figure: digits next to a letter name a thing (H100, 70B,
# NVLink 3 is spaced and small, p99, 32K) and numbers below 10 are counts of things (8 GPUs).
NUMBER = re.compile(r"(?<![A-Za-z0-9.,])(\d[\d,]*(?:\.\d+)?)(?![\d.]*[A-Za-z0-9])")


def _numbers(text: str) -> set[float]:
    return {float(m.group(1).replace(",", "")) for m in NUMBER.finditer(text)}


@pytest.mark.parametrize("round_", BANK.all(), ids=lambda r: r.id)
def test_every_number_in_the_prose_is_an_input_or_a_computed_figure(round_: DesignRound) -> None:
    figures = round_figures(round_)
    assert set(figures) == FIGURES[round_.kind]
    allowed = {n for value in figures.values() for n in _numbers(value)}
    inputs = (round_.training or round_.serving).model_dump()  # type: ignore[union-attr]
    allowed |= {float(v) for v in inputs.values() if isinstance(v, int | float)}
    for lang in ("en", "zh"):
        words = round_.words(lang)
        for text in (words.title, words.brief, words.model_answer, *words.watch,
                     *words.next_questions):  # fmt: skip
            typed = {n for n in _numbers(filled(text, figures)) if n >= 10} - allowed
            assert not typed, f"{round_.id} ({lang}): {typed} in {text[:80]!r}"


def test_the_chinese_editions_keep_to_the_glossary() -> None:
    terms = [
        Term.model_validate(t) for t in yaml.safe_load((CONTENT / "glossary.yaml").read_text())
    ]
    for path in sorted((CONTENT / "design" / "zh-CN").glob("*.yaml")):
        assert edition_wording_problems(terms, path.read_text(encoding="utf-8")) == [], path.name
