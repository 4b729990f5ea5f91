"""quiz undo and new per day

Undoing an answer (#29): each attempt keeps the item's state from before it, previous_state
(app/quiz/models.py); answers stored before this migration keep none, and cannot be undone.
A learner's daily limit of new items, reviewsettings, one row per user who changed it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('reviewsettings',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('new_per_day', sa.Integer(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('user_id')
    )
    with op.batch_alter_table('quizattempt', schema=None) as batch_op:
        batch_op.add_column(sa.Column('previous_state', sa.JSON(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('quizattempt', schema=None) as batch_op:
        batch_op.drop_column('previous_state')

    op.drop_table('reviewsettings')
