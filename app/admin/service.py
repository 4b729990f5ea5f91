"""What an admin does to accounts, shared by the admin page and the admin CLI."""

from __future__ import annotations

from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.accounts.models import User
from app.accounts.schemas import LABELS, Credentials
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
    user = User(
        username=creds.username, password_hash=hash_password(creds.password), is_admin=is_admin
    )
    session.add(user)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise AdminError(f"a user called {creds.username!r} exists already") from None
    session.refresh(user)
    return user


def find_user(session: Session, username: str) -> User:
    user = session.exec(select(User).where(User.username == username.strip())).first()
    if user is None:
        raise AdminError(f"no user called {username!r}")
    return user


def set_disabled(session: Session, user: User, disabled: bool) -> User:
    user.disabled = disabled
    session.add(user)
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
    creds = _credentials(user.username, password)
    user.password_hash = hash_password(creds.password)
    session.add(user)
    session.commit()
    session.refresh(user)
    return user


def all_users(session: Session) -> list[User]:
    return list(session.exec(select(User).order_by(col(User.id))))


def recent_runs(session: Session, limit: int = 20) -> list[DemoRun]:
    return list(session.exec(select(DemoRun).order_by(col(DemoRun.created_at).desc()).limit(limit)))
