"""Registration modes and invite codes; disabled users; rate limits on log-in and registration."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.invites import make_invite
from app.accounts.models import User
from app.main import create_app
from tests.utils import csrf_token, log_out, make_settings, register


def _app(tmp_path: Path, **overrides: object) -> TestClient:
    return TestClient(create_app(make_settings(tmp_path / "data", **overrides)))


def _register(client: TestClient, username: str, **extra: str):
    data = {"username": username, "password": "correct horse", "csrf_token": csrf_token(client)}
    return client.post("/register", data={**data, **extra}, follow_redirects=False)


def test_closed_registration_refuses_and_says_so(tmp_path: Path) -> None:
    with _app(tmp_path, registration="closed") as client:
        assert "does not take new accounts" in client.get("/register").text
        assert _register(client, "ada").status_code == 403
        with Session(client.app.state.engine) as session:
            assert session.exec(select(User)).all() == []


def test_invite_only_registration_needs_a_valid_unexpired_code(tmp_path: Path) -> None:
    with _app(tmp_path, registration="invite") as client:
        page = client.get("/register?invite=abc")
        assert 'name="invite"' in page.text and 'value="abc"' in page.text
        missing = _register(client, "ada")
        assert missing.status_code == 422 and "paste your code" in missing.text
        forged, _ = make_invite("another-servers-secret", 7)
        assert "not valid here" in _register(client, "ada", invite=forged).text
        code, _ = make_invite("test-secret-key", 7)
        assert _register(client, "ada", invite=code).status_code == 303
        log_out(client)
        # A code works for everyone it is given to until it expires.
        assert _register(client, "bob", invite=code).status_code == 303


def test_an_expired_invite_is_refused(tmp_path: Path, monkeypatch) -> None:
    import app.accounts.invites as invites

    code, _ = make_invite("test-secret-key", 1)
    real_now = invites.datetime.now
    monkeypatch.setattr(
        invites,
        "datetime",
        type(
            "FakeDatetime",
            (),
            {"now": staticmethod(lambda tz: real_now(tz) + invites.timedelta(days=2))},
        ),
    )
    assert invites.invite_problem("test-secret-key", code) == (
        "Invite code: expired; ask the admin for a new one"
    )


def test_a_disabled_user_cannot_log_in_and_their_session_stops(tmp_path: Path) -> None:
    with _app(tmp_path) as client:
        register(client, "ada")
        assert client.get("/progress", follow_redirects=False).status_code == 200
        with Session(client.app.state.engine) as session:
            user = session.exec(select(User).where(User.username == "ada")).one()
            user.disabled = True
            session.add(user)
            session.commit()
        # The existing session ends at its next request.
        assert client.get("/progress", follow_redirects=False).status_code == 303
        assert ">ada<" not in client.get("/").text
        login = client.post(
            "/login",
            data={"username": "ada", "password": "correct horse", "csrf_token": csrf_token(client)},
            follow_redirects=False,
        )
        assert login.status_code == 403 and "disabled" in login.text


def test_login_is_rate_limited_per_address_with_retry_after(tmp_path: Path) -> None:
    with _app(tmp_path, login_rate_limit="3/minute") as client:
        token = csrf_token(client)
        for i in range(3):
            data = {"username": f"user{i}", "password": "wrong password", "csrf_token": token}
            assert client.post("/login", data=data).status_code == 422
        data = {"username": "user9", "password": "wrong password", "csrf_token": token}
        limited = client.post("/login", data=data)
        assert limited.status_code == 429
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        assert "Too many log-in attempts" in limited.text
        assert '<form class="stack panel" method="post" action="/login">' in limited.text


def test_failed_logins_are_limited_per_username_across_addresses(tmp_path: Path) -> None:
    with _app(tmp_path, login_rate_limit="2/minute") as client:
        register(client, "ada")
        log_out(client)
        limiter = client.app.state.limits["login_username"]
        limiter.record("ada")
        limiter.record("ada")  # two failures from elsewhere
        data = {"username": "ada", "password": "correct horse", "csrf_token": csrf_token(client)}
        # Even the right password waits: the account is being guessed at.
        assert client.post("/login", data=data).status_code == 429


def test_registration_is_rate_limited_per_address(tmp_path: Path) -> None:
    with _app(tmp_path, register_rate_limit="2/hour") as client:
        assert _register(client, "ada").status_code == 303
        log_out(client)
        assert _register(client, "bob").status_code == 303
        log_out(client)
        limited = _register(client, "cyd")
        assert limited.status_code == 429 and "minutes" in limited.text
        assert int(limited.headers["Retry-After"]) > 60
