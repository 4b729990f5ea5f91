"""Stored invite codes on a real SQLite file: uses counted, expiry, revocation, and a race."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.accounts import invites
from app.accounts.invites import InviteRefused
from app.accounts.models import Invite, InviteUse, User, utc_now
from app.accounts.schemas import Credentials
from app.accounts.service import create_account
from app.db import make_engine, migrate


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    database = tmp_path / "shardlab.db"
    migrate(database)
    engine = make_engine(f"sqlite:///{database}")
    yield engine
    engine.dispose()


def _account(session: Session, name: str, code: str) -> User:
    return create_account(session, Credentials(username=name, password="correct horse"), code)


def test_a_single_use_code_makes_one_account_then_says_it_is_used(engine: Engine) -> None:
    with Session(engine) as session:
        code = invites.make_invite(session, None, days=7).code
        assert invites.invite_problem(session, code) is None
        ada = _account(session, "ada", code)
        message = "Invite code: used up (it was good for 1 account); ask the admin for a new one"
        assert invites.invite_problem(session, code) == message
        with pytest.raises(InviteRefused, match=r"used up \(it was good for 1 account\)"):
            _account(session, "bob", code)
        assert [u.username for u in session.exec(select(User))] == ["ada"]
        (listing,) = invites.list_invites(session)
        assert (listing.status, listing.used_by, listing.made_by) == ("used up", ["ada"], "CLI")
        assert session.exec(select(InviteUse)).one().user_id == ada.id


def test_a_three_use_code_makes_three_accounts(engine: Engine) -> None:
    with Session(engine) as session:
        code = invites.make_invite(session, None, days=7, max_uses=3).code
        for name in ("ada", "bob", "cyd"):
            _account(session, name, code)
        assert "good for 3 accounts" in invites.invite_problem(session, code)
        with pytest.raises(InviteRefused):
            _account(session, "dan", code)
        (listing,) = invites.list_invites(session)
        assert listing.invite.uses == 3 and listing.used_by == ["ada", "bob", "cyd"]


def test_an_expired_code_is_refused(engine: Engine) -> None:
    with Session(engine) as session:
        invite = invites.make_invite(session, None, days=1)
        invite.expires_at = utc_now() - timedelta(seconds=1)
        session.add(invite)
        session.commit()
        expired = "Invite code: expired; ask the admin for a new one"
        assert invites.invite_problem(session, invite.code) == expired
        with pytest.raises(InviteRefused, match="expired"):
            _account(session, "ada", invite.code)
        assert invites.list_invites(session)[0].status == "expired"


def test_a_revoked_code_is_refused_and_unknown_codes_too(engine: Engine) -> None:
    with Session(engine) as session:
        invite = invites.make_invite(session, None, days=7, max_uses=5)
        revoked_at = invites.revoke_invite(session, invite).revoked_at
        assert invites.revoke_invite(session, invite).revoked_at == revoked_at  # kept
        withdrawn = "Invite code: withdrawn by the admin; ask them for a new one"
        assert invites.invite_problem(session, invite.code) == withdrawn
        with pytest.raises(InviteRefused, match="withdrawn"):
            _account(session, "ada", invite.code)
        assert "not valid here" in invites.invite_problem(session, "no-such-code")
        assert "paste your code" in invites.invite_problem(session, "  ")
        assert session.exec(select(User)).all() == []


@pytest.mark.parametrize(
    ("days", "uses", "words"),
    [
        (0, 1, "1 to 90 days"),
        (91, 1, "1 to 90 days"),
        (7, 0, "1 to 100 uses"),
        (7, 101, "1 to 100"),
    ],
)
def test_bounds_on_days_and_uses(engine: Engine, days: int, uses: int, words: str) -> None:
    with Session(engine) as session, pytest.raises(ValueError, match=words):
        invites.make_invite(session, None, days=days, max_uses=uses)


def test_two_registrations_racing_for_a_single_use_code_make_one_account(
    engine: Engine,
) -> None:
    with Session(engine) as session:
        code = invites.make_invite(session, None, days=7).code
    # Both pass the form's check before either writes: the case the conditional UPDATE is for.
    both_checked = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def register(name: str) -> None:
        with Session(engine) as session:
            assert invites.invite_problem(session, code) is None
            both_checked.wait(timeout=10)
            try:
                _account(session, name, code)
                outcomes[name] = "created"
            except InviteRefused as exc:
                outcomes[name] = str(exc)

    threads = [threading.Thread(target=register, args=(name,)) for name in ("ada", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes.values()) == [
        "Invite code: used up (it was good for 1 account); ask the admin for a new one",
        "created",
    ]
    with Session(engine) as session:
        (winner,) = [name for name, outcome in outcomes.items() if outcome == "created"]
        assert [u.username for u in session.exec(select(User))] == [winner]
        invite = session.exec(select(Invite)).one()
        assert invite.uses == 1 and invites.list_invites(session)[0].used_by == [winner]
