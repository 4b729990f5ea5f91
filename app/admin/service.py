"""What an admin does to accounts and invite codes, shared by the admin page and the admin CLI."""

from __future__ import annotations

from pydantic import ValidationError
from sqlmodel import Session, col, func, select

from app.accounts import invites, sessions
from app.accounts.models import Invite, User
from app.accounts.schemas import LABELS, Credentials
from app.accounts.service import UsernameTaken, create_account
from app.forms import friendly_errors
from app.live.models import DemoRun
from app.security import hash_password


class AdminError(Exception):
    """A request an admin can correct: an unknown user, a taken name, a short password."""


def _credentials(username: str, password: str) -> Credentials:
    try:
        return Credentials(username=username, password=password)
    except ValidationError as exc:
        raise AdminError("; ".join(friendly_errors(exc, LABELS))) from None


def create_user(session: Session, username: str, password: str, is_admin: bool = False) -> User:
    creds = _credentials(username, password)
    try:
        return create_account(session, creds, is_admin=is_admin)
    except UsernameTaken:
        raise AdminError(f"a user called {creds.username!r} exists already") from None


def find_user(session: Session, username: str) -> User:
    # Whatever its case, as log-in finds it: the unique index is on lower(username) (User).
    typed = username.strip()
    user = session.exec(select(User).where(func.lower(User.username) == func.lower(typed))).first()
    if user is None:
        raise AdminError(f"no user called {username!r}")
    return user


def set_disabled(session: Session, user: User, disabled: bool) -> User:
    assert user.id is not None
    user.disabled = disabled
    session.add(user)
    if disabled:
        # Ended for good: enabling the user again brings none of them back.
        sessions.end_all_sessions(session, user.id)
    session.commit()
    session.refresh(user)
    return user


def set_admin(session: Session, user: User, is_admin: bool) -> User:
    user.is_admin = is_admin
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def reset_password(session: Session, user: User, password: str) -> User:
    assert user.id is not None
    creds = _credentials(user.username, password)
    user.password_hash = hash_password(creds.password)
    session.add(user)
    # A reset is for a lost or leaked password: whoever used the old one is signed out.
    sessions.end_all_sessions(session, user.id)
    session.commit()
    session.refresh(user)
    return user


def sign_out_everywhere(session: Session, user: User) -> int:
    """Ends every session of `user`; how many were live."""
    assert user.id is not None
    ended = sessions.end_all_sessions(session, user.id)
    session.commit()
    return ended


def find_invite(session: Session, code_or_id: str) -> Invite:
    """By its code, or by the id `list-invites` shows."""
    invite = invites.find_invite(session, code_or_id)
    if invite is None and code_or_id.strip().isdigit():
        invite = session.get(Invite, int(code_or_id))
    if invite is None:
        raise AdminError(f"no invite with the code or id {code_or_id!r}")
    return invite


def all_users(session: Session) -> list[User]:
    return list(session.exec(select(User).order_by(col(User.id))))


def recent_runs(session: Session, limit: int = 20) -> list[DemoRun]:
    return list(session.exec(select(DemoRun).order_by(col(DemoRun.created_at).desc()).limit(limit)))
