"""One row per demo run: what was asked, what the worker reported, so a result can be shared."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from app.accounts.models import utc_now


class DemoRun(SQLModel, table=True):
    # Random and unguessable: the id is the share link.
    id: str = Field(primary_key=True, max_length=32)
    demo: str = Field(index=True, max_length=50)
    params: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    user_id: int | None = Field(default=None, foreign_key="user.id", index=True)
    # running, done, failed or cancelled
    status: str = Field(default="running", max_length=20)
    world_size: int | None = None
    backend: str | None = Field(default=None, max_length=10)
    # The worker's events as received (measurements, then done or error): a replay of the run.
    events: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    message: str | None = None
    created_at: datetime = Field(default_factory=utc_now, index=True)
    finished_at: datetime | None = None
