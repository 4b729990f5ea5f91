"""Invite codes: signed with the app's secret key and valid until they expire.

No table: a code is its own proof (itsdangerous signs a random nonce and the time it was
made), so it needs no migration and works for everyone it is given to until it expires.
Changing SHARDLAB_SECRET_KEY revokes every code (and every session).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

SALT = "shardlab-invite"
MAX_DAYS = 90


def _serializer(secret_key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt=SALT)


def make_invite(secret_key: str, days: int) -> tuple[str, datetime]:
    """A new code, valid for `days` days, and when it expires (UTC)."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"an invite is valid for 1 to {MAX_DAYS} days")
    payload = {"n": secrets.token_urlsafe(6), "d": days}
    code = _serializer(secret_key).dumps(payload)
    return code, datetime.now(UTC) + timedelta(days=days)


def invite_problem(secret_key: str, code: str) -> str | None:
    """None for a good code; otherwise what is wrong with it, in words for the form."""
    code = code.strip()
    if not code:
        return "Invite code: this server admits new accounts by invitation; paste your code"
    serializer = _serializer(secret_key)
    try:
        payload, signed_at = serializer.loads(code, return_timestamp=True)
    except SignatureExpired:
        return "Invite code: expired; ask the admin for a new one"
    except BadSignature:
        return "Invite code: not valid here; check you copied all of it"
    days = payload.get("d") if isinstance(payload, dict) else None
    if not isinstance(days, int) or datetime.now(UTC) > signed_at + timedelta(days=days):
        return "Invite code: expired; ask the admin for a new one"
    return None
