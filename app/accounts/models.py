"""Accounts: a username, an argon2 hash, and what an admin may set: the admin flag, disabled.
Invite codes, and who redeemed each, for SHARDLAB_REGISTRATION=invite."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Index, column, func
from sqlmodel import Field, SQLModel


def utc_now() -> datetime:
    return datetime.now(UTC)


class User(SQLModel, table=True):
    # "Ada" and "ada" are one name (#25): the database refuses a second spelling, and log-in
    # looks the name up through the same lower(). SQLite's lower() folds ASCII letters only,
    # which is all a username may hold (app/accounts/schemas.py Username), so it agrees with
    # what a person would call the same name. Migration 0013 made the index.
    __table_args__ = (Index("ix_user_username_lower", func.lower(column("username")), unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=40)
    password_hash: str
    created_at: datetime = Field(default_factory=utc_now)
    is_admin: bool = False
    # A disabled user cannot log in, and an existing session stops working.
    disabled: bool = False
    # The UI language the user chose ("en" or "zh"); None: follow the cookie and the browser.
    language: str | None = Field(default=None, max_length=8)
    # How many times the learner's progress has changed: the database adds one on every write
    # to a table of it (triggers, migration 0017), whoever writes. A page kept for a learner
    # is kept under the number it was rendered at (app/page_cache.py OWN_PAGES). Never set by
    # the app.
    progress_version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class Invite(SQLModel, table=True):
    """A code that lets `max_uses` people register until it expires or is revoked."""

    id: int | None = Field(default=None, primary_key=True)
    # Kept as written, not hashed: the admin page lists live codes so the admin can send one
    # again, and a code only opens the register form, a few times, for a few days. Whoever
    # can read this table reads the data directory, which holds the secret key as well.
    code: str = Field(index=True, unique=True, max_length=40)
    created_at: datetime = Field(default_factory=utc_now)
    expires_at: datetime
    max_uses: int = 1
    uses: int = 0
    # None: made with the admin CLI, which acts as no web user.
    created_by: int | None = Field(default=None, foreign_key="user.id")
    revoked_at: datetime | None = None


class InviteUse(SQLModel, table=True):
    """Who registered with which code: one row per account an invite made."""

    # An account is made once, so it redeems at most one code.
    user_id: int = Field(foreign_key="user.id", primary_key=True)
    invite_id: int = Field(foreign_key="invite.id", index=True)
    used_at: datetime = Field(default_factory=utc_now)
