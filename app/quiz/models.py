"""One row per answer a learner submits."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from app.accounts.models import utc_now


class QuizAttempt(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    item_id: str = Field(index=True, max_length=100)
    # The generated question's inputs, so the attempt can be re-graded and re-shown.
    question_params: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    prompt: str
    answer: float
    expected: float
    unit: str = Field(max_length=20)
    correct: bool
    created_at: datetime = Field(default_factory=utc_now, index=True)
