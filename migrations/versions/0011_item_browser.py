"""item browser

The card browser's marks (#29): a learner's suspended items and notes, itemmark, one row per
user and item they marked (app/quiz/models.py ItemMark). A table of its own, not columns of
itemstate: an item never answered has no FSRS state, and undoing its first answer deletes its
itemstate row. Existing learners start with none.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('itemmark',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('item_id', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('suspended', sa.Boolean(), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('user_id', 'item_id')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('itemmark')
