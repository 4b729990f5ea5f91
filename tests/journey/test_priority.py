"""The plan on the real syllabus when not everything fits: the Design level and the weakest
topics are kept first, a step never before its prerequisites, and compressed steps priced by
the plan's own constants fit more of the path into the same days."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import given
from hypothesis import strategies as st

from app.cards.models import Card, CardMeta
from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.journey.models import StudyGoal
from app.journey.plan import (
    CALCULATOR_AND_DEMO_MINUTES,
    COMPRESSED_STEP_QUESTIONS,
    MINUTES_PER_QUESTION,
    READING_WORDS_PER_MINUTE,
    plan_study,
)
from app.journey.service import CORE_LEVEL, Position, compressed_words, plan_for, step_work
from app.journey.syllabus import LEVELS, STEP_QUESTIONS, steps
from app.quiz.bank import QuestionBank

LIBRARY = CardLibrary.load(ROOT_DIR / "content" / "cards")
BANK = QuestionBank.load(ROOT_DIR / "content" / "quiz")
PATH = steps(LIBRARY)
WORK = {compressed: [step_work(s, BANK, LIBRARY, compressed) for s in PATH]
        for compressed in (False, True)}  # fmt: skip
CORE = next(level for level in LEVELS if level.key == CORE_LEVEL).cards
TODAY = date(2026, 12, 1)


def _plan(minutes: int, days: int, compressed: bool = False):  # noqa: ANN202
    goal = StudyGoal(user_id=1, interview_date=TODAY + timedelta(days=days),
                     minutes_per_day=minutes, compressed=compressed)  # fmt: skip
    return plan_for(goal, Position(PATH, set(), compressed), BANK, LIBRARY, [], today=TODAY)


def _placed(plan) -> list[str]:  # noqa: ANN001
    return [c for day in plan.days for c in day.new_steps]


def test_at_45_minutes_a_day_for_14_days_the_design_level_is_in_the_plan() -> None:
    plan = _plan(45, 14)
    assert not plan.fits  # whole steps do not all fit: something is left out, and said
    assert set(CORE) <= set(_placed(plan))
    # 3D parallelism needs tensor parallelism, which needs the ring all-reduce: both kept.
    placed = _placed(plan)
    assert placed.index("ring-all-reduce") < placed.index("tensor-parallel")
    assert placed.index("tensor-parallel") < placed.index("3d-parallelism")


def test_compressed_steps_fit_more_of_the_path_into_the_same_days() -> None:
    whole, compressed = _plan(45, 14), _plan(45, 14, compressed=True)
    assert len(_placed(compressed)) > len(_placed(whole))
    assert sum(s.minutes for s in WORK[True]) < sum(s.minutes for s in WORK[False])


def test_a_compressed_step_reads_the_30_second_answer_and_the_derivation_after_it() -> None:
    def words(n: int) -> str:
        return " ".join(["word"] * n)

    text = (f"## In 30 seconds\n\n{words(90)}\n\n## Derivation\n\n{words(210)}\n\n"
            f"## Worked example\n\n{words(300)}\n\n## Sources\n\n{words(40)}\n")  # fmt: skip
    card = Card(meta=CardMeta(id="a-card", title="A card"), html="", has_diagram=False,
                sections=["In 30 seconds", "Derivation", "Worked example", "Sources"],
                answer_html="", text=text)  # fmt: skip
    # 90 + 210 words, and the headings' "## In 30 seconds" (4) and "## Derivation" (2).
    assert compressed_words(card) == 306


def test_a_compressed_steps_minutes_are_the_plans_constants_over_what_it_keeps() -> None:
    card = LIBRARY.get("training-compute")
    assert card is not None
    step = next(s for s in PATH if s.card_id == "training-compute")
    whole, compressed = step_work(step, BANK, LIBRARY, False), step_work(step, BANK, LIBRARY, True)
    assert (whole.items, compressed.items) == (STEP_QUESTIONS, COMPRESSED_STEP_QUESTIONS)
    assert compressed.minutes == (
        compressed_words(card) / READING_WORDS_PER_MINUTE
        + CALCULATOR_AND_DEMO_MINUTES
        + COMPRESSED_STEP_QUESTIONS * MINUTES_PER_QUESTION
    )
    assert whole.minutes == (
        len(card.text.split()) / READING_WORDS_PER_MINUTE
        + CALCULATOR_AND_DEMO_MINUTES
        + STEP_QUESTIONS * MINUTES_PER_QUESTION
    )
    assert whole.prerequisites == compressed.prerequisites == ()
    assert compressed.minutes < whole.minutes


@given(
    minutes=st.integers(10, 600),
    days=st.integers(0, 60),
    compressed=st.booleans(),
    done=st.sets(st.sampled_from([s.card_id for s in PATH]), max_size=20),
    weak=st.lists(st.sampled_from([s.card_id for s in PATH]), max_size=6, unique=True),
)
def test_on_the_syllabus_a_step_never_comes_before_its_prerequisites(
    minutes: int, days: int, compressed: bool, done: set[str], weak: list[str]
) -> None:
    work = [s for s in WORK[compressed] if s.card_id not in done]
    plan = plan_study(TODAY, TODAY + timedelta(days=days), minutes, work, first=[*CORE, *weak])
    placed = _placed(plan)
    assert sorted(placed + plan.unplaced) == sorted(s.card_id for s in work)
    for card_id in placed:
        card = LIBRARY.get(card_id)
        assert card is not None
        for before in card.meta.prerequisites:
            assert before in done or placed.index(before) < placed.index(card_id)
