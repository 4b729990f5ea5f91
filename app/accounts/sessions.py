"""Server-side session records (issue #25, finding 5): one row per log-in, so that log-out, a
password change or reset, disabling a user and "sign out everywhere" end a session for good,
not only in the browser that asked.

The signed cookie carries a random token; the table keeps only its SHA-256. A copy of the
database (a backup, a shell on the box) then holds nothing that signs anyone in, even beside
the secret key. The token has 256 random bits, so a fast hash loses nothing to guessing and
keeps the check one lookup in a unique index. The integer id names a row on the account and
admin pages; without the token it is worth nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import bindparam
from sqlmodel import Field, Session, SQLModel, col, delete, select, update

from app.accounts.models import User, utc_now

# How long a cookie lives since the last response that set it: Starlette SessionMiddleware's
# default max_age, which app/main.py keeps. A row unseen for longer has no cookie left.
SESSION_MAX_AGE = timedelta(days=14)
# last_seen_at is a hint for the account page, not a clock: writing it at most this often
# spares SQLite a write on every request.
TOUCH_EVERY = timedelta(minutes=5)
USER_AGENT_CHARS = 200
ADDRESS_CHARS = 64


class UserSession(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    token_sha256: str = Field(index=True, unique=True, max_length=64)
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = Field(default_factory=utc_now)
    last_seen_at: datetime = Field(default_factory=utc_now)
    # As the browser sent them at log-in, shortened: only shown, so the owner can tell
    # their devices apart.
    user_agent: str = Field(default="", max_length=USER_AGENT_CHARS)
    client_address: str = Field(default="", max_length=ADDRESS_CHARS)
    # Set when the session is ended; such a row signs no one in again.
    ended_at: datetime | None = None


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start_session(session: Session, user_id: int, user_agent: str, client_address: str) -> str:
    """A new session row for `user_id`; the token for the cookie (the row keeps its hash).
    The user's rows that ended or went stale a cookie's lifetime ago go at the same time, so
    the table holds about one row per device in use."""
    now = utc_now()
    session.exec(
        delete(UserSession).where(
            col(UserSession.user_id) == user_id,
            (col(UserSession.ended_at) < now - SESSION_MAX_AGE)
            | (col(UserSession.last_seen_at) < now - SESSION_MAX_AGE - TOUCH_EVERY),
        )
    )
    token = secrets.token_urlsafe(32)
    session.add(
        UserSession(
            token_sha256=token_sha256(token),
            user_id=user_id,
            created_at=now,
            last_seen_at=now,
            user_agent=user_agent[:USER_AGENT_CHARS],
            client_address=client_address[:ADDRESS_CHARS],
        )
    )
    session.commit()
    return token


# Asked on every signed-in request: built once, with the token and the user as parameters.
# Built anew each time, the expression cost more than the lookup itself.
_LIVE_SESSION = (
    select(User, UserSession)
    .join(UserSession, col(UserSession.user_id) == col(User.id))
    .where(
        col(UserSession.token_sha256) == bindparam("token_sha256"),
        col(UserSession.user_id) == bindparam("user_id"),
        col(UserSession.ended_at).is_(None),
        col(User.disabled).is_(False),
    )
)


def live_session(session: Session, user_id: int, token: str) -> tuple[User, UserSession] | None:
    """The user and the row of the session `token` names, if it belongs to `user_id`, has not
    ended, and the user is not disabled: one lookup by the token's unique index."""
    params = {"token_sha256": token_sha256(token), "user_id": user_id}
    found = session.exec(_LIVE_SESSION, params=params).first()
    return (found[0], found[1]) if found is not None else None


def touch_session(session: Session, record: UserSession) -> None:
    """Notes that the session was used now, if it was last noted over TOUCH_EVERY ago."""
    now = utc_now()
    if now - record.last_seen_at >= TOUCH_EVERY:
        record.last_seen_at = now
        session.add(record)
        session.commit()


def end_session_by_token(session: Session, token: str) -> None:
    session.exec(
        update(UserSession)
        .where(
            col(UserSession.token_sha256) == token_sha256(token),
            col(UserSession.ended_at).is_(None),
        )
        .values(ended_at=utc_now())
    )
    session.commit()


def end_session(session: Session, user_id: int, session_id: int) -> bool:
    """Ends the session `session_id` if it is one of `user_id`'s and still live; whether it was.
    The owner is part of the query: an id alone must never end someone else's session."""
    ended = session.exec(
        update(UserSession)
        .where(
            col(UserSession.id) == session_id,
            col(UserSession.user_id) == user_id,
            col(UserSession.ended_at).is_(None),
        )
        .values(ended_at=utc_now())
    )
    session.commit()
    return ended.rowcount > 0


def end_all_sessions(session: Session, user_id: int, keep_id: int | None = None) -> int:
    """Ends every live session of `user_id` but `keep_id` (the one asking, if any); how many.
    Committed by the caller, so a password and the end of its old sessions land together."""
    query = update(UserSession).where(
        col(UserSession.user_id) == user_id, col(UserSession.ended_at).is_(None)
    )
    if keep_id is not None:
        query = query.where(col(UserSession.id) != keep_id)
    return session.exec(query.values(ended_at=utc_now())).rowcount


def active_sessions(session: Session, user_id: int) -> list[UserSession]:
    """The user's live sessions, the most recently used first."""
    fresh_since = utc_now() - SESSION_MAX_AGE - TOUCH_EVERY
    query = (
        select(UserSession)
        .where(
            col(UserSession.user_id) == user_id,
            col(UserSession.ended_at).is_(None),
            col(UserSession.last_seen_at) >= fresh_since,
        )
        .order_by(col(UserSession.last_seen_at).desc(), col(UserSession.id).desc())
    )
    return list(session.exec(query))
