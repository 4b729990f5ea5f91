"""card visits

The pages of the path a signed-in learner has opened, the first time each: a card's page or a
calculator's, by path (app/journey/models.py CardVisit). The step page ticks "read the card"
and "work the numbers" from them. Existing learners start with none: their ticks come as they
open the pages again.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0010'
down_revision: Union[str, Sequence[str], None] = '0009'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('cardvisit',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('page', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('first_seen', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('user_id', 'page')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('cardvisit')
