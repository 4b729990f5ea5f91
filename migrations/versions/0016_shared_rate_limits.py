"""shared rate limits

Rate-limit events move from each process's memory into the database (app/ratelimit.py
RateLimitEvent), so several web processes count against one window. Nothing to carry over:
a restart always forgot the in-memory counts.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0016'
down_revision: Union[str, Sequence[str], None] = '0015'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('ratelimitevent',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=96), nullable=False),
    sa.Column('at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_ratelimitevent_name_key_at', 'ratelimitevent', ['name', 'key', 'at'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('ix_ratelimitevent_name_key_at', table_name='ratelimitevent')
    op.drop_table('ratelimitevent')
