"""usernames without case

"Ada" and "ada" were two accounts (#25): a unique index on lower(username) now makes them one
name (app/accounts/models.py User). Names that already differ only in case are settled first:
the oldest account (lowest id) keeps its name, each later one gets its own name with "-2",
"-3", ... added (the first such name nobody has), and every rename is logged as a warning so
the operator can tell those users their new name. Their passwords and data stay as they were.

SQLite's lower() folds only A-Z (PostgreSQL's folds more, by its locale), and usernames have
only ever been ASCII letters, digits and "_.-" (app/accounts/schemas.py), so the duplicates
found here with lower() are exactly the names the index would refuse, on either database.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01

"""
import logging
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0013'
down_revision: Union[str, Sequence[str], None] = '0012'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

log = logging.getLogger("shardlab.migrations")

# User.username's max_length: a new name is cut to fit with its suffix.
MAX_USERNAME_CHARS = 40


def _free_name(username: str, taken: set[str]) -> str:
    """`username` with the smallest "-n" (n from 2) whose lower case no account has."""
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = username[: MAX_USERNAME_CHARS - len(suffix)] + suffix
        if candidate.lower() not in taken:
            return candidate
        n += 1


def upgrade() -> None:
    """Upgrade schema."""
    conn = op.get_bind()
    # Core, not text(): "user" is a reserved word on PostgreSQL, and the dialect quotes it.
    user = sa.table("user", sa.column("id", sa.Integer), sa.column("username", sa.String))
    users = conn.execute(
        sa.select(user.c.id, user.c.username, sa.func.lower(user.c.username)).order_by(user.c.id)
    )
    rows = users.all()
    taken = {folded for _id, _name, folded in rows}
    kept: dict[str, tuple[int, str]] = {}  # lower(name) -> the oldest account with it
    for user_id, username, folded in rows:
        if folded not in kept:
            kept[folded] = (user_id, username)
            continue
        new_name = _free_name(username, taken)
        taken.add(new_name.lower())
        conn.execute(user.update().where(user.c.id == user_id).values(username=new_name))
        older_id, older_name = kept[folded]
        log.warning(
            "renamed user %r (id %s) to %r: usernames are now the same whatever their case, "
            "and %r (id %s) is older; tell them to log in with their new name",
            username, user_id, new_name, older_name, older_id,
        )
    op.create_index(
        'ix_user_username_lower', 'user', [sa.text('lower(username)')], unique=True
    )


def downgrade() -> None:
    """Downgrade schema. The renames stay: the old names were duplicates."""
    op.drop_index('ix_user_username_lower', table_name='user')
