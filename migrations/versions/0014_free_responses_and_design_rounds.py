"""free responses and design rounds

A free response's whole answer, the rubric points ticked and its score on QuizAttempt; a
system-design round's id and answer sheet on DesignAttempt (issue #27). Every column is
nullable: the answers before them had none of it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0014'
down_revision: Union[str, Sequence[str], None] = '0013'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('quizattempt') as batch:
        batch.add_column(sa.Column('response', sa.Text(), nullable=True))
        batch.add_column(sa.Column('rubric_ticked', sa.JSON(none_as_null=True), nullable=True))
        batch.add_column(sa.Column('score', sa.Float(), nullable=True))
    with op.batch_alter_table('designattempt') as batch:
        batch.add_column(sa.Column('round_id', sqlmodel.sql.sqltypes.AutoString(length=80),
                                   nullable=True))
        batch.add_column(sa.Column('sheet', sa.JSON(none_as_null=True), nullable=True))
        batch.create_index(batch.f('ix_designattempt_round_id'), ['round_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('designattempt') as batch:
        batch.drop_index(batch.f('ix_designattempt_round_id'))
        batch.drop_column('sheet')
        batch.drop_column('round_id')
    with op.batch_alter_table('quizattempt') as batch:
        batch.drop_column('score')
        batch.drop_column('rubric_ticked')
        batch.drop_column('response')
