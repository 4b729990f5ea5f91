"""Keeping each demo run, so its result can be shared by URL and an admin can see recent runs."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.accounts.models import utc_now
from app.live.models import DemoRun

# A run's events are bounded by its parameters; this is a backstop so no row grows unbounded.
MAX_EVENTS = 2000


def start_run(engine: Engine, demo: str, params: dict[str, Any], user_id: int | None) -> str:
    run_id = secrets.token_urlsafe(12)
    with Session(engine) as session:
        session.add(DemoRun(id=run_id, demo=demo, params=params, user_id=user_id))
        session.commit()
    return run_id


def finish_run(
    engine: Engine,
    run_id: str,
    status: str,
    events: list[dict[str, Any]],
    world_size: int | None,
    backend: str | None,
    message: str | None = None,
) -> None:
    with Session(engine) as session:
        run = session.get(DemoRun, run_id)
        if run is None:
            return
        run.status = status
        run.events = events[:MAX_EVENTS]
        run.world_size = world_size
        run.backend = backend
        run.message = message
        run.finished_at = utc_now()
        session.add(run)
        session.commit()


def get_run(engine: Engine, run_id: str) -> DemoRun | None:
    with Session(engine, expire_on_commit=False) as session:
        return session.get(DemoRun, run_id)


def recent_runs(engine: Engine, limit: int = 20) -> list[DemoRun]:
    with Session(engine, expire_on_commit=False) as session:
        statement = select(DemoRun).order_by(col(DemoRun.created_at).desc()).limit(limit)
        return list(session.exec(statement))
