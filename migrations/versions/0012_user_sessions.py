"""user sessions

Server-side session records (#25 finding 5): one usersession row per log-in
(app/accounts/sessions.py UserSession). The signed cookie names its row by a random token,
of which the table keeps only the SHA-256; a request is signed in only while that row exists,
belongs to the cookie's user and has not ended, so log-out, a password change or reset, and
disabling a user end sessions for good. Existing cookies name no row: everyone signed in
before this upgrade logs in once more.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


# revision identifiers, used by Alembic.
revision: str = '0012'
down_revision: Union[str, Sequence[str], None] = '0011'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('usersession',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('last_seen_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('user_agent', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('client_address', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('ended_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('usersession', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_usersession_token_sha256'), ['token_sha256'], unique=True)
        batch_op.create_index(batch_op.f('ix_usersession_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('usersession', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_usersession_user_id'))
        batch_op.drop_index(batch_op.f('ix_usersession_token_sha256'))

    op.drop_table('usersession')
