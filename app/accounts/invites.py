"""Invite codes: rows in the `invite` table, spent one use per account.

A code is single-use unless the admin says more (up to MAX_USES), expires after 1 to
MAX_DAYS days, and can be revoked. Spending a use is one conditional UPDATE in the same
transaction as the new user, so two people racing for the last use cannot both get in.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, select, update

from app.accounts.models import Invite, InviteUse, User, utc_now
from app.calc.messages import N_, Message

MAX_DAYS = 90
MAX_USES = 100
# Labels for the admin page and the CLI; only ACTIVE codes can be redeemed.
ACTIVE, EXPIRED, USED_UP, REVOKED = "active", "expired", "used up", "revoked"


class InviteRefused(ValueError):
    """The code cannot make an account; the message says why, in words for the form."""


@dataclass(frozen=True)
class InviteListing:
    invite: Invite
    status: str
    made_by: str  # a username, or "CLI"
    used_by: list[str]  # usernames, in the order they registered


def new_code() -> str:
    """96 random bits, URL-safe, so the code can ride in a link as it is; never starting with
    "-", which a command line would read as an option (`python -m app.admin ... CODE`)."""
    while (code := secrets.token_urlsafe(12)).startswith("-"):
        pass
    return code


def make_invite(session: Session, created_by: int | None, days: int, max_uses: int = 1) -> Invite:
    """A new code, good for `max_uses` accounts within `days` days."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"an invite is valid for 1 to {MAX_DAYS} days")
    if not 1 <= max_uses <= MAX_USES:
        raise ValueError(f"an invite is good for 1 to {MAX_USES} uses")
    invite = Invite(
        code=new_code(),
        expires_at=utc_now() + timedelta(days=days),
        max_uses=max_uses,
        created_by=created_by,
    )
    session.add(invite)
    session.commit()
    session.refresh(invite)
    return invite


def find_invite(session: Session, code: str) -> Invite | None:
    query = select(Invite).where(Invite.code == code.strip())
    # Read the row afresh even if this session loaded it before: another registration may
    # have spent its last use since, and the form should say so.
    return session.exec(query.execution_options(populate_existing=True)).first()


def invite_status(invite: Invite, now: datetime | None = None) -> str:
    # Revoked wins: it is what the admin did last, whatever else is true of the code.
    if invite.revoked_at is not None:
        return REVOKED
    if invite.uses >= invite.max_uses:
        return USED_UP
    if (now or utc_now()) >= invite.expires_at:
        return EXPIRED
    return ACTIVE


# The form's words are Messages: English here, said again in the reader's language by the page.
def _status_problem(invite: Invite) -> Message | None:
    status = invite_status(invite)
    if status == REVOKED:
        return Message(N_("Invite code: withdrawn by the admin; ask them for a new one"))
    if status == USED_UP:
        if invite.max_uses == 1:
            accounts = Message(N_("1 account"))
        else:
            accounts = Message(N_("%(n)s accounts"), n=invite.max_uses)
        return Message(
            N_("Invite code: used up (it was good for %(accounts)s); ask the admin for a new one"),
            accounts=accounts,
        )
    if status == EXPIRED:
        return Message(N_("Invite code: expired; ask the admin for a new one"))
    return None


def invite_problem(session: Session, code: str) -> Message | None:
    """None for a code that can make an account now; otherwise what is wrong, for the form."""
    if not code.strip():
        return Message(
            N_("Invite code: this server admits new accounts by invitation; paste your code")
        )
    invite = find_invite(session, code)
    if invite is None:
        return Message(N_("Invite code: not valid here; check you copied all of it"))
    return _status_problem(invite)


def redeem_invite(session: Session, code: str, user: User) -> None:
    """Spend one use of `code` on `user` (flushed, so it has an id) in the session's open
    transaction, without committing: the caller commits it with the user, or rolls back on
    InviteRefused."""
    assert user.id is not None
    # Check and count in one statement: SQLite lets one writer in at a time, so of two
    # registrations racing for a single-use code the second sees uses == max_uses and
    # matches no row, instead of both reading "1 left" and both writing.
    spent = session.exec(
        update(Invite)
        .where(
            col(Invite.code) == code.strip(),
            col(Invite.uses) < col(Invite.max_uses),
            col(Invite.revoked_at).is_(None),
            col(Invite.expires_at) > utc_now(),
        )
        .values(uses=col(Invite.uses) + 1)
        .returning(col(Invite.id))
        # The session's copy of the row (if any) is not trusted for this: it is re-read.
        .execution_options(synchronize_session=False)
    ).first()
    if spent is None:
        problem = invite_problem(session, code)
        used_up = Message(N_("Invite code: used up; ask the admin for a new one"))
        raise InviteRefused(problem or used_up)
    session.add(InviteUse(invite_id=spent.id, user_id=user.id))
    session.flush()


def revoke_invite(session: Session, invite: Invite) -> Invite:
    """Stop the code working now; revoking it again keeps the first time."""
    if invite.revoked_at is None:
        invite.revoked_at = utc_now()
        session.add(invite)
        session.commit()
        session.refresh(invite)
    return invite


def list_invites(session: Session, invite_id: int | None = None) -> list[InviteListing]:
    """Every invite, newest first, with its status and who used it; or just `invite_id`."""
    query = select(Invite).order_by(col(Invite.id).desc())
    if invite_id is not None:
        query = query.where(Invite.id == invite_id)
    invites = list(session.exec(query))
    usernames = {u.id: u.username for u in session.exec(select(User))}
    used_by: dict[int, list[str]] = defaultdict(list)
    uses = select(InviteUse).where(col(InviteUse.invite_id).in_([i.id for i in invites]))
    for use in session.exec(uses.order_by(col(InviteUse.used_at))):
        used_by[use.invite_id].append(usernames.get(use.user_id, "?"))
    now = utc_now()
    return [
        InviteListing(
            invite=i,
            status=invite_status(i, now),
            made_by="CLI" if i.created_by is None else usernames.get(i.created_by, "?"),
            used_by=used_by[i.id] if i.id is not None else [],
        )
        for i in invites
    ]
