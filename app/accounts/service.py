"""Making an account: the user row and, on an invite-only server, one use of the code."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from app.accounts.invites import InviteRefused, redeem_invite
from app.accounts.models import User
from app.accounts.schemas import Credentials
from app.calc.messages import N_
from app.security import hash_password


class UsernameTaken(ValueError):
    """Another account has this name (perhaps made a moment ago); the message is the form's."""


def create_account(
    session: Session, creds: Credentials, invite_code: str | None = None, is_admin: bool = False
) -> User:
    """The new user, committed in the same transaction as the use of `invite_code` (if one is
    given): either both are written or neither is. Raises UsernameTaken or InviteRefused."""
    # Hashed before the transaction starts: a quarter second holding SQLite's write lock
    # would make every other writer wait.
    user = User(
        username=creds.username, password_hash=hash_password(creds.password), is_admin=is_admin
    )
    session.add(user)
    try:
        session.flush()
        if invite_code is not None:
            redeem_invite(session, invite_code, user)
    except IntegrityError:
        # The name, or one that differs only in case (the index on lower(username), User).
        session.rollback()
        raise UsernameTaken(N_("Username: already taken, pick another")) from None
    except InviteRefused:
        session.rollback()
        raise
    session.commit()
    session.refresh(user)
    return user
