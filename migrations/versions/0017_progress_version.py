"""progress version

user.progress_version counts the changes to a learner's progress, and the database counts
them itself: a trigger on every table of a learner's progress adds one to the learner's
number whenever one of their rows is inserted, updated or deleted, by whatever wrote it
(a route, a bulk statement, a progress import, the admin CLI, another web process). A page
rendered from that progress and kept under the number it was read at (the dashboard,
app/page_cache.py OWN_PAGES) is therefore never shown once the progress it shows has
changed. Triggers, not application code: one write path missed would show a learner
numbers that are no longer theirs.

Written once for each database: SQLite's triggers hold their statements, PostgreSQL's call a
function. The function is made with OR REPLACE: a restore of an older backup drops the tables
(and so their triggers) but not the function, and this migration then runs again.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0017'
down_revision: Union[str, Sequence[str], None] = '0016'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

# Every table of a learner's progress: each has a user_id.
PROGRESS_TABLES = (
    "quizattempt", "itemstate", "itemmark", "reviewsettings", "mockinterview",
    "designattempt", "studygoal", "cardvisit",
)
BUMP = 'UPDATE "user" SET progress_version = progress_version + 1 WHERE id = {row}.user_id;'
PG_FUNCTION = "shardlab_progress_changed"


def upgrade() -> None:
    op.add_column(
        "user", sa.Column("progress_version", sa.Integer(), nullable=False, server_default="0")
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
            CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN {BUMP.format(row="OLD")} END IF;
                IF TG_OP <> 'DELETE' THEN {BUMP.format(row="NEW")} END IF;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
        """)
        for table in PROGRESS_TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_progress AFTER INSERT OR UPDATE OR DELETE ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()"
            )
        return
    for table in PROGRESS_TABLES:
        op.execute(f"CREATE TRIGGER {table}_progress_insert AFTER INSERT ON {table} "
                   f"BEGIN {BUMP.format(row='NEW')} END")
        op.execute(f"CREATE TRIGGER {table}_progress_update AFTER UPDATE ON {table} "
                   f"BEGIN {BUMP.format(row='OLD')} {BUMP.format(row='NEW')} END")
        op.execute(f"CREATE TRIGGER {table}_progress_delete AFTER DELETE ON {table} "
                   f"BEGIN {BUMP.format(row='OLD')} END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in PROGRESS_TABLES:
            op.execute(f"DROP TRIGGER {table}_progress ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()")
    else:
        for table in PROGRESS_TABLES:
            for change in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER {table}_progress_{change}")
    # Not batch mode, which would copy the table and lose its lower(username) index on
    # SQLite: SQLite drops a column itself since 3.35.
    op.execute('ALTER TABLE "user" DROP COLUMN progress_version')
