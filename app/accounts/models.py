"""Accounts: a username, an argon2 hash, and what an admin may set: the admin flag, disabled."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Field, SQLModel


def utc_now() -> datetime:
    return datetime.now(UTC)


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=40)
    password_hash: str
    created_at: datetime = Field(default_factory=utc_now)
    is_admin: bool = False
    # A disabled user cannot log in, and an existing session stops working.
    disabled: bool = False
