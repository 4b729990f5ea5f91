"""study goal compressed

Whether a learner's plan takes compressed steps (the 30-second answer and the derivation,
fewer questions; app/journey/plan.py). Existing goals keep whole steps.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0008'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('studygoal', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('compressed', sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('studygoal', schema=None) as batch_op:
        batch_op.drop_column('compressed')
