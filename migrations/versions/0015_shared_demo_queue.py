"""shared demo queue

The demo line moves from one process's memory into the database, so that every web process
sees the same line (issue #31): demoqueueentry holds each waiting or running run
(app/live/models.py DemoQueueEntry), and demoqueuestate the one row every change locks first
(app/live/queue_store.py), with the round-robin's rounds. The line starts empty: runs of the
process that ran before the upgrade ended with it.

Portable operations only: it runs on SQLite and PostgreSQL alike.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0015'
down_revision: Union[str, Sequence[str], None] = '0014'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('demoqueueentry',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('demo', sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
    sa.Column('account', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('address', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('cost_s', sa.Float(), nullable=False),
    sa.Column('joined_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('round', sa.Integer(), nullable=False),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('worker', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    sa.Column('cancelled', sa.Boolean(), nullable=False),
    sa.Column('heartbeat_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('process', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    state = op.create_table('demoqueuestate',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('round', sa.Integer(), nullable=False),
    sa.Column('last_rounds', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    # The lock row: it must exist before any process joins the line.
    op.bulk_insert(state, [{'id': 1, 'round': 0, 'last_rounds': {}}])


def downgrade() -> None:
    op.drop_table('demoqueuestate')
    op.drop_table('demoqueueentry')
