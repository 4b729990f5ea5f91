"""Alembic environment: SQLModel's metadata, batch mode because SQLite cannot ALTER much.

The URL is the one app/db.py's alembic_config sets, or when Alembic is run by hand
(`.venv/bin/alembic upgrade head`), the app's own setting (SHARDLAB_DATABASE_URL, else the
SQLite file in SHARDLAB_DATA_DIR).
"""

from alembic import context
from sqlalchemy import create_engine, pool, text
from sqlmodel import SQLModel

import app.accounts.models  # noqa: F401  (registers the tables on SQLModel.metadata)
import app.accounts.sessions  # noqa: F401
import app.journey.models  # noqa: F401
import app.live.models  # noqa: F401
import app.quiz.models  # noqa: F401
from app.config import Settings, database_kind
from app.db import APPLICATION_NAME, MIGRATION_LOCK_KEY

config = context.config
target_metadata = SQLModel.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or Settings().database_url


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    url = _url()
    postgres = database_kind(url) == "postgresql"
    connectable = create_engine(
        url,
        poolclass=pool.NullPool,
        connect_args={"application_name": APPLICATION_NAME} if postgres else {},
    )
    with connectable.connect() as connection:
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True
        )
        with context.begin_transaction():
            if postgres:
                # Web processes starting together would each find the schema old and upgrade
                # it at once. The first to get this lock migrates; the rest wait here until
                # its transaction commits (which releases the lock), then read the version
                # it left and have nothing to do. (SQLite serves one web process.)
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
            context.run_migrations()
    connectable.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
