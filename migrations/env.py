"""Alembic environment: SQLModel's metadata, batch mode because SQLite cannot ALTER much."""

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlmodel import SQLModel

import app.accounts.models  # noqa: F401  (registers the tables on SQLModel.metadata)
import app.accounts.sessions  # noqa: F401
import app.journey.models  # noqa: F401
import app.live.models  # noqa: F401
import app.quiz.models  # noqa: F401

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = engine_from_config(
        config.get_section(config.config_ini_section, {}),
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with connectable.connect() as connection:
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
