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


class DemoQueueEntry(SQLModel, table=True):
    """One run in the demo line that every web process shares (app/live/queue_store.py):
    waiting for a worker, or running on one. The row leaves with its run."""

    id: int | None = Field(default=None, primary_key=True)
    demo: str = Field(max_length=50)
    # Whose place it is (app/live/queue_rules.py Owner): one place per account, a few per address.
    account: str = Field(max_length=100)
    address: str = Field(max_length=100)
    user_id: int | None = None  # for the admin's list only; None: anonymous
    cost_s: float
    joined_at: datetime
    round: int  # turns go by round, then by id (app/live/queue_rules.py)
    state: str = Field(default="waiting", max_length=10)  # waiting or running
    worker: str | None = Field(default=None, max_length=255)  # host:port, while running
    # Set by the admin: a waiting run leaves the line, a running one's stream stops its job.
    cancelled: bool = False
    # Renewed every few seconds by the process that holds the run; a row whose process died
    # stops being renewed and is dropped, so the line never wedges.
    heartbeat_at: datetime
    process: str = Field(max_length=100)  # host:pid:nonce of the web process holding it


class DemoQueueState(SQLModel, table=True):
    """The line's one row of shared state; every change to the line first updates it, which
    makes the changes one at a time across processes (app/live/queue_store.py says how)."""

    id: int = Field(default=1, primary_key=True, sa_column_kwargs={"autoincrement": False})
    round: int = 0  # of the run that started last
    # Per address, the round of its latest run while that is not behind `round`.
    last_rounds: dict[str, int] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
