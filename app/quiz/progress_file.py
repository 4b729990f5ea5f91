"""One's own progress as a JSON file: export everything, import (validated, then merged).

Import never loses data: the whole file is validated before anything is written, attempts
already present are not added twice, an item's scheduler state is replaced only by a state
reviewed more recently, and the study goal and the review settings each only by one set more
recently. Everything lands in one transaction. Version 1 files, from before the goal was
exported, and version 2 files from before "design the run" answers were kept or from before
the review settings were exported, import as they did.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal, TypeVar

from fsrs import Card
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from sqlmodel import Session, SQLModel, select

from app.calc.planner import RULES
from app.db import STORED_INTEGERS
from app.i18n import gettext
from app.journey.models import MAX_MINUTES_PER_DAY, MIN_MINUTES_PER_DAY, StudyGoal
from app.quiz.design_run import DesignAnswer, Verdict
from app.quiz.free_grading import MAX_RESPONSE_CHARS
from app.quiz.layouts import SCENARIOS
from app.quiz.models import (
    MAX_NEW_PER_DAY,
    MIN_NEW_PER_DAY,
    DesignAttempt,
    ItemState,
    QuizAttempt,
    ReviewSettings,
)
from app.quiz.stored_cards import card_id_for, checked_card, repaired_card

Row = TypeVar("Row")

FORMAT = "shardlab-progress"
VERSION = 2
MAX_ATTEMPTS = 100_000
# One schedule per question: the bank has a few hundred; 90,000 made-up ones took 45 s to
# import and slowed that learner's every page (issue #25).
MAX_STATES = 5_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _in_utc(value: datetime) -> datetime:
    # The database keeps times in UTC: a time of year 1 or 9999 whose offset takes it off the
    # calendar there could not be stored, and failed the import with a 500 (issue #25).
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("the time is off the calendar once in UTC") from None


FileTime = Annotated[AwareDatetime, AfterValidator(_in_utc)]
# A count past what an Integer column holds (4 bytes on PostgreSQL, 8 on SQLite) failed the
# import with a 500 too.
StoredCount = Annotated[int, Field(ge=0, le=STORED_INTEGERS.stop - 1)]


def _nul_replaced(text: str) -> str:
    # PostgreSQL's text cannot hold a NUL (SQLite's can): one is kept as U+FFFD, the character
    # for one that cannot be shown, on either database, so a file imports the same into both.
    # JSON columns keep a NUL as it is, escaped.
    return text.replace("\x00", "\ufffd")


StoredText = AfterValidator(_nul_replaced)


class ExportedState(_Strict):
    item_id: Annotated[str, Field(min_length=1, max_length=100), StoredText]
    fsrs_card: dict[str, Any]
    reviews: StoredCount
    lapses: StoredCount

    @field_validator("fsrs_card")
    @classmethod
    def _a_real_fsrs_card(cls, value: dict[str, Any]) -> dict[str, Any]:
        # What the scheduler and the pages compute with must be what FSRS itself writes: a
        # naive date, a negative stability or a fractional step imported once made every page
        # that reads the schedule fail from then on (issue #25). The rules are shared with the
        # pages and the admin's repair-progress, which mend cards stored before them.
        return checked_card(value).to_dict()


RubricIndex = Annotated[int, Field(ge=0, lt=8)]  # an item has at most 8 rubric points


class ExportedAttempt(_Strict):
    item_id: Annotated[str, Field(min_length=1, max_length=100), StoredText]
    kind: Annotated[str, Field(max_length=20), StoredText]
    question_params: dict[str, float | int]
    prompt: Annotated[str, StoredText]
    answer: float | None
    expected: float | None
    answer_text: Annotated[str, Field(max_length=200), StoredText]
    unit: Annotated[str, Field(max_length=20), StoredText]
    correct: bool
    rating: Annotated[int, Field(ge=1, le=4)] | None
    duration_ms: StoredCount | None
    created_at: FileTime
    # A free response (files from before issue #27 have none of these).
    response: Annotated[str, Field(max_length=MAX_RESPONSE_CHARS), StoredText] | None = None
    rubric_ticked: Annotated[list[RubricIndex], Field(max_length=8)] | None = None
    score: Annotated[float, Field(ge=0, le=1)] | None = None


class ExportedGoal(_Strict):
    # Any date: a goal exported before its interview is still the learner's once it has passed.
    interview_date: date
    minutes_per_day: Annotated[int, Field(ge=MIN_MINUTES_PER_DAY, le=MAX_MINUTES_PER_DAY)]
    updated_at: FileTime


class ExportedDesign(_Strict):
    # Bounded here too, so a wrong one is named where it is: not "layout.scenario" (issue #25).
    scenario: Annotated[int, Field(ge=0, lt=len(SCENARIOS))]
    layout: dict[str, int | str]
    score: Annotated[float, Field(ge=0, le=1)]
    verdict: Verdict
    rules: list[str]
    created_at: FileTime
    # A system-design round's id and answer sheet (issue #27); None for a "design the run".
    round_id: Annotated[str, Field(min_length=1, max_length=80), StoredText] | None = None
    sheet: dict[str, Any] | None = None

    @field_validator("rules")
    @classmethod
    def _the_planners_rules(cls, value: list[str]) -> list[str]:
        unknown = [rule for rule in value if rule not in RULES]
        if unknown:
            raise ValueError(f"not a rule of the layout planner: {', '.join(unknown)}")
        return value

    @model_validator(mode="after")
    def _a_layout_the_page_would_take(self) -> ExportedDesign:
        # The page's own form model, so an imported layout re-opens and re-scores as typed.
        if self.round_id is not None:  # a round's sheet is kept as it was graded
            return self
        try:
            DesignAnswer.model_validate({**self.layout, "scenario": self.scenario})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise ValueError(f"layout.{where}: {error['msg']}") from None
        return self


class ExportedReviewSettings(_Strict):
    new_per_day: Annotated[int, Field(ge=MIN_NEW_PER_DAY, le=MAX_NEW_PER_DAY)]
    updated_at: FileTime


class ProgressFile(_Strict):
    format: Literal["shardlab-progress"]
    version: Literal[1, 2]
    exported_at: FileTime
    states: Annotated[list[ExportedState], Field(max_length=MAX_STATES)]
    attempts: Annotated[list[ExportedAttempt], Field(max_length=MAX_ATTEMPTS)]
    goal: ExportedGoal | None = None  # absent from version 1; null when no goal was set
    # Absent from files exported before design answers were kept.
    designs: Annotated[list[ExportedDesign], Field(max_length=MAX_ATTEMPTS)] = []
    # Absent from files exported before they were; null when the learner kept the defaults.
    review_settings: ExportedReviewSettings | None = None


@dataclass(frozen=True)
class Imported:
    attempts_added: int
    states_updated: int
    goal_restored: bool
    designs_added: int
    review_settings_restored: bool


def export_progress(session: Session, user_id: int) -> dict[str, Any]:
    states = session.exec(select(ItemState).where(ItemState.user_id == user_id)).all()
    attempts = session.exec(
        select(QuizAttempt).where(QuizAttempt.user_id == user_id).order_by(QuizAttempt.id)
    ).all()
    designs = session.exec(
        select(DesignAttempt).where(DesignAttempt.user_id == user_id).order_by(DesignAttempt.id)
    ).all()
    goal = session.exec(select(StudyGoal).where(StudyGoal.user_id == user_id)).first()
    settings = session.get(ReviewSettings, user_id)
    exported_goal = None
    if goal is not None:
        exported_goal = ExportedGoal(
            interview_date=goal.interview_date,
            minutes_per_day=goal.minutes_per_day,
            updated_at=goal.updated_at,
        )
    exported_settings = None
    if settings is not None:
        exported_settings = ExportedReviewSettings(
            new_per_day=settings.new_per_day, updated_at=settings.updated_at
        )
    now = datetime.now(UTC)
    data = ProgressFile(
        format=FORMAT,
        version=VERSION,
        exported_at=now,
        # A card stored before the import checked them goes out as the pages read it, repaired
        # (issue #25, finding 7): as stored it would fail the file's own check.
        states=[
            ExportedState(
                item_id=s.item_id,
                fsrs_card=repaired_card(
                    s.fsrs_card, card_id_for(user_id, s.item_id), now
                ).card.to_dict(),
                reviews=s.reviews,
                lapses=s.lapses,
            )
            for s in states
        ],  # fmt: skip
        # previous_state is for undoing an answer here and now, not part of one's history.
        attempts=[
            ExportedAttempt.model_validate(
                a.model_dump(exclude={"id", "user_id", "mock_id", "previous_state"})
            )
            for a in attempts
        ],
        goal=exported_goal,
        designs=[
            ExportedDesign.model_validate(d.model_dump(exclude={"id", "user_id"})) for d in designs
        ],
        review_settings=exported_settings,
    )
    return data.model_dump(mode="json")


def parse_progress(raw: bytes) -> tuple[ProgressFile | None, list[str]]:
    """The validated file, or None and what is wrong with it, in words."""
    try:
        return ProgressFile.model_validate_json(raw), []
    except ValidationError as exc:
        problems = []
        # A field's own complaint stays pydantic's: it names a key of the file, not of the page.
        for error in exc.errors()[:10]:
            where = ".".join(str(p) for p in error["loc"]) or gettext("the file")
            problems.append(f"{where}: {error['msg']}")
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            return None, [gettext("this is not a JSON file exported by ShardLab")]
        return None, problems


def _last_review(card: dict[str, Any]) -> datetime:
    value = card.get("last_review")
    return datetime.fromisoformat(value) if value else datetime.min.replace(tzinfo=UTC)


def import_progress(session: Session, user_id: int, data: ProgressFile) -> Imported:
    """Merges the file into this user's progress."""
    # An answer is known by its item and moment, a design answer by its scenario and moment.
    added = _add_unseen(
        session,
        data.attempts,
        session.exec(select(QuizAttempt).where(QuizAttempt.user_id == user_id)),
        lambda a: (a.item_id, a.created_at.astimezone(UTC)),
        lambda a: QuizAttempt(user_id=user_id, **a.model_dump()),
    )
    states = {
        s.item_id: s for s in session.exec(select(ItemState).where(ItemState.user_id == user_id))
    }
    updated: set[str] = set()  # the items whose schedule the file replaced
    for s in data.states:
        current = states.get(s.item_id)
        if current is not None and _last_review(current.fsrs_card) >= _last_review(s.fsrs_card):
            continue
        due = Card.from_dict(s.fsrs_card).due  # type: ignore[arg-type]
        state = current or ItemState(user_id=user_id, item_id=s.item_id, fsrs_card={}, due=due)
        state.fsrs_card, state.due = s.fsrs_card, due
        state.reviews, state.lapses = s.reviews, s.lapses
        state.updated_at = datetime.now(UTC)
        session.add(state)
        # A file may name an item twice: its later entry is compared with this one, not added
        # as a second schedule (which failed the import with a 500, issue #25).
        states[s.item_id] = state
        updated.add(s.item_id)
    goal_restored = data.goal is not None and _restore_goal(session, user_id, data.goal)
    designs_added = _add_unseen(
        session,
        data.designs,
        session.exec(select(DesignAttempt).where(DesignAttempt.user_id == user_id)),
        lambda d: (d.scenario, d.created_at.astimezone(UTC)),
        lambda d: DesignAttempt(user_id=user_id, **d.model_dump()),
    )
    settings_restored = data.review_settings is not None and _restore_review_settings(
        session, user_id, data.review_settings
    )
    session.commit()
    return Imported(added, len(updated), goal_restored, designs_added, settings_restored)


def _add_unseen(
    session: Session,
    rows: Iterable[Row],
    stored: Iterable[Any],
    key: Callable[[Any], Hashable],
    make: Callable[[Row], SQLModel],
) -> int:
    """Adds the rows of the file whose key no stored row of this user has (nor an earlier row
    of the same file); how many were added. A stored row and a file's row have the fields the
    key reads, so one key serves both."""
    known = {key(row) for row in stored}
    added = 0
    for row in rows:
        if (k := key(row)) in known:
            continue
        known.add(k)
        session.add(make(row))
        added += 1
    return added


def _restore_goal(session: Session, user_id: int, goal: ExportedGoal) -> bool:
    """Takes the file's goal unless this user has set theirs since; adds it to the session."""
    current = session.exec(select(StudyGoal).where(StudyGoal.user_id == user_id)).first()
    if current is not None and current.updated_at.astimezone(UTC) >= goal.updated_at:
        return False
    current = current or StudyGoal(user_id=user_id, interview_date=goal.interview_date,
                                   minutes_per_day=goal.minutes_per_day)  # fmt: skip
    current.interview_date, current.minutes_per_day = goal.interview_date, goal.minutes_per_day
    current.updated_at = goal.updated_at
    session.add(current)
    return True


def _restore_review_settings(
    session: Session, user_id: int, settings: ExportedReviewSettings
) -> bool:
    """Takes the file's settings unless this user has changed theirs since; adds them to the
    session."""
    current = session.get(ReviewSettings, user_id)
    if current is not None and current.updated_at.astimezone(UTC) >= settings.updated_at:
        return False
    current = current or ReviewSettings(user_id=user_id, new_per_day=settings.new_per_day)
    current.new_per_day, current.updated_at = settings.new_per_day, settings.updated_at
    session.add(current)
    return True
