"""Quiz tables: every answer (QuizAttempt), the FSRS state per user per item, a learner's review
settings, mock interviews, "design the run" answers, study groups and their members."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from app.accounts.models import utc_now


class QuizAttempt(SQLModel, table=True):
    """One answer, kept for history; the scheduler's state lives in ItemState."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    item_id: str = Field(index=True, max_length=100)
    kind: str = Field(default="generated", max_length=20)
    # A generated question's inputs, so the attempt can be re-graded and re-shown.
    question_params: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    prompt: str
    answer: float | None = None  # numeric kinds: the number typed, in `unit`
    expected: float | None = None
    answer_text: str = Field(default="", max_length=200)  # choices picked, or the typed text
    unit: str = Field(default="", max_length=20)
    correct: bool
    rating: int | None = None  # the FSRS rating this answer gave (1 Again .. 4 Easy)
    duration_ms: int | None = None
    mock_id: int | None = Field(default=None, foreign_key="mockinterview.id", index=True)
    created_at: datetime = Field(default_factory=utc_now, index=True)
    # The item's ItemState as it was before this answer, so the answer can be undone
    # (app.quiz.service.undo_answer): {fsrs_card, due, reviews, lapses, updated_at}, times in
    # ISO 8601; SQL NULL for the item's first answer, and for answers from before undo existed.
    previous_state: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True)
    )
    # A free response (issue #27): the whole answer as typed or dictated, the rubric points
    # the learner ticked (indexes into the item's rubric) and the score they gave, 0 to 1.
    response: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    rubric_ticked: list[int] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True)
    )
    score: float | None = None


class ItemState(SQLModel, table=True):
    """The FSRS card of one user for one item: `fsrs_card` is fsrs.Card.to_dict()."""

    __table_args__ = (UniqueConstraint("user_id", "item_id"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    item_id: str = Field(index=True, max_length=100)
    fsrs_card: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    due: datetime = Field(index=True)  # copied out of fsrs_card, so due items are one query
    reviews: int = 0
    lapses: int = 0
    updated_at: datetime = Field(default_factory=utc_now)


# The longest note a learner may keep on an item (the card browser, app/quiz/browser.py).
MAX_NOTE_CHARS = 500


class ItemMark(SQLModel, table=True):
    """A learner's own marks on an item from the card browser: suspended (never asked by the
    daily review or practice) and a note. Apart from ItemState because an item never answered
    has no FSRS card, and because undoing an item's first answer deletes its ItemState row."""

    user_id: int = Field(foreign_key="user.id", primary_key=True)
    item_id: str = Field(primary_key=True, max_length=100)
    suspended: bool = False
    note: str = Field(default="", max_length=MAX_NOTE_CHARS)
    updated_at: datetime = Field(default_factory=utc_now)


# The settings form's bounds for new items a day, and an imported progress file's.
MIN_NEW_PER_DAY = 0
MAX_NEW_PER_DAY = 200


class ReviewSettings(SQLModel, table=True):
    """A learner's choices for the daily review; a learner with no row has the defaults
    (app.quiz.review_queue.NEW_PER_DAY)."""

    user_id: int = Field(foreign_key="user.id", primary_key=True)
    new_per_day: int  # new items a daily review may bring in each day
    updated_at: datetime = Field(default_factory=utc_now)


class MockInterview(SQLModel, table=True):
    """N questions drawn up front (with a generated item's inputs), answered against a clock."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    # [{"item_id": ..., "inputs": {...}}], in the order they are asked; a skipped question
    # also has "skipped_at" (ISO 8601) and "duration_ms", one left when the learner ended
    # early "ended_at" (app/quiz/mock.py)
    questions: list[dict[str, Any]] = Field(sa_column=Column(JSON, nullable=False))
    time_limit_s: int
    started_at: datetime = Field(default_factory=utc_now)


class DesignAttempt(SQLModel, table=True):
    """One scored "design the run" answer (app/quiz/design_run.py). The score is kept as shown:
    a later planner may score the same layout differently, and the history should not move."""

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    scenario: int  # an index into app.quiz.layouts.SCENARIOS
    # DesignAnswer's fields but the scenario, so the layout can be re-scored and re-opened.
    layout: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    score: float  # 0 to 1
    verdict: str = Field(max_length=20)  # app.quiz.design_run.Verdict
    # breaks_rule: the keys of app.calc.planner.RULES it broke; otherwise empty.
    rules: list[str] = Field(sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utc_now, index=True)
    # A system-design round (issue #27): the round's id in content/design/ (then `scenario`
    # is 0 and unused) and the whole answer sheet with each term's grade, as shown.
    round_id: str | None = Field(default=None, max_length=80, index=True)
    sheet: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True)
    )


class StudyGroup(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=60)
    invite_code: str = Field(index=True, unique=True, max_length=20)
    created_by: int = Field(foreign_key="user.id")
    created_at: datetime = Field(default_factory=utc_now)


class GroupMember(SQLModel, table=True):
    group_id: int = Field(foreign_key="studygroup.id", primary_key=True)
    user_id: int = Field(foreign_key="user.id", primary_key=True, index=True)
    # Members opt in: until they do, the group sees their name and nothing else.
    shares_progress: bool = False
    joined_at: datetime = Field(default_factory=utc_now)
