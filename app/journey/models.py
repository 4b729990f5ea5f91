"""The learner's goal: the interview date, the minutes a day they can give and whether their
plan takes compressed steps (app/journey/plan.py), one per user; and the pages of the path
they have opened, which tick a step's parts."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from app.accounts.models import utc_now

# The plan form's bounds, and an imported progress file's.
MIN_MINUTES_PER_DAY = 10
MAX_MINUTES_PER_DAY = 600


class StudyGoal(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True, unique=True)
    interview_date: date
    minutes_per_day: int
    compressed: bool = False  # each step reads the 30-second answer and the derivation only
    updated_at: datetime = Field(default_factory=utc_now)


class CardVisit(SQLModel, table=True):
    """The first time a signed-in learner opened one of a card's pages: the card itself
    (/cards/<id>) or a calculator (/calculators/<name>), by its path. The step page ticks
    "read the card" and "work the numbers" from these (app/journey/parts.py)."""

    # One row per learner and page; its index also finds a learner's pages.
    __table_args__ = (UniqueConstraint("user_id", "page"),)

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id")
    page: str = Field(max_length=200)
    first_seen: datetime = Field(default_factory=utc_now)
