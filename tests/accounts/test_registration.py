"""Registration modes and invite codes; disabled users; rate limits on log-in and registration."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts import router as accounts_router
from app.accounts.invites import make_invite, new_code
from app.accounts.models import Invite, User
from app.main import create_app
from app.security import unknown_user_hash
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


def _invite(client: TestClient, max_uses: int = 1) -> str:
    with Session(client.app.state.engine) as session:
        return make_invite(session, None, days=7, max_uses=max_uses).code


def test_invite_only_registration_needs_a_stored_code(tmp_path: Path) -> None:
    with _app(tmp_path, registration="invite") as client:
        page = client.get("/register?invite=abc")
        assert 'name="invite"' in page.text and 'value="abc"' in page.text
        missing = _register(client, "ada")
        assert missing.status_code == 422 and "paste your code" in missing.text
        assert "not valid here" in _register(client, "ada", invite="made-up-code").text
        code = _invite(client)
        assert _register(client, "ada", invite=code).status_code == 303
        log_out(client)
        # Single-use: the next person is told so, on the form.
        refused = _register(client, "bob", invite=code)
        assert refused.status_code == 422 and "used up (it was good for 1 account)" in refused.text
        assert 'value="bob"' in refused.text
        with Session(client.app.state.engine) as session:
            assert [u.username for u in session.exec(select(User))] == ["ada"]


def test_a_taken_username_does_not_spend_the_invite(tmp_path: Path) -> None:
    with _app(tmp_path, registration="invite") as client:
        code = _invite(client, max_uses=2)
        assert _register(client, "ada", invite=code).status_code == 303
        log_out(client)
        taken = _register(client, "ada", invite=code)
        assert taken.status_code == 422 and "already taken" in taken.text
        with Session(client.app.state.engine) as session:
            assert session.exec(select(Invite)).one().uses == 1


def test_two_people_racing_for_one_single_use_code_get_one_account(tmp_path: Path) -> None:
    with _app(tmp_path, registration="invite") as first:
        code = _invite(first)
        # A second browser: its own cookies and CSRF token, the same app and database.
        second = TestClient(first.app)
        forms = [(first, "ada"), (second, "bob")]
        tokens = [csrf_token(client) for client, _ in forms]
        start = threading.Barrier(2)
        statuses: dict[str, int] = {}

        def post(client: TestClient, name: str, token: str) -> None:
            data = {"username": name, "password": "correct horse", "csrf_token": token}
            start.wait(timeout=10)
            response = client.post(
                "/register", data={**data, "invite": code}, follow_redirects=False
            )
            statuses[name] = response.status_code

        threads = [
            threading.Thread(target=post, args=(client, name, token))
            for (client, name), token in zip(forms, tokens, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(statuses.values()) == [303, 422]
        with Session(first.app.state.engine) as session:
            (user,) = session.exec(select(User)).all()
            assert statuses[user.username] == 303
            assert session.exec(select(Invite)).one().uses == 1


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


def test_a_guessed_account_slows_the_guessers_not_its_owner(tmp_path: Path) -> None:
    # Issue #25, finding 4: wrong passwords for ada from elsewhere used to make her right one
    # fail too. The per-username limit holds back only addresses that have failed lately.
    with _app(tmp_path, login_rate_limit="3/minute") as client:
        register(client, "ada")
        log_out(client)
        guessed = client.app.state.limits["login_username"]
        for _ in range(3):
            guessed.record("ada")  # three failures from other addresses
        right = {"username": "ada", "password": "correct horse", "csrf_token": csrf_token(client)}
        # This address has failed nothing: the owner gets in.
        assert client.post("/login", data=right, follow_redirects=False).status_code == 303
        log_out(client)
        # Once this address guesses wrong too, the account's limit holds it back.
        wrong = {**right, "password": "wrong password", "csrf_token": csrf_token(client)}
        assert client.post("/login", data=wrong).status_code == 422
        assert (
            client.post("/login", data={**right, "csrf_token": csrf_token(client)}).status_code
            == 429
        )


def test_an_unknown_username_costs_a_password_check_like_a_known_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue #25, finding 9: an unknown username answered in 30 ms, a known one after argon2's
    # 0.3 s, which told which usernames exist. Both now verify a password hash (the real
    # argon2 verify runs; it is only counted).
    checked: list[str] = []
    real_verify = accounts_router.verify_password

    def counted(password: str, hashed: str) -> bool:
        checked.append(hashed)
        return real_verify(password, hashed)

    monkeypatch.setattr(accounts_router, "verify_password", counted)
    with _app(tmp_path) as client:
        register(client, "ada")
        log_out(client)
        for username in ("ada", "nobody"):
            data = {"username": username, "password": "wrong", "csrf_token": csrf_token(client)}
            assert client.post("/login", data=data).status_code == 422
        assert len(checked) == 2 and checked[1] == unknown_user_hash()
        assert all(hashed.startswith("$argon2id$") for hashed in checked)


def test_registration_is_rate_limited_per_address(tmp_path: Path) -> None:
    with _app(tmp_path, register_rate_limit="2/hour") as client:
        assert _register(client, "ada").status_code == 303
        log_out(client)
        assert _register(client, "bob").status_code == 303
        log_out(client)
        limited = _register(client, "cyd")
        assert limited.status_code == 429 and "minutes" in limited.text
        assert int(limited.headers["Retry-After"]) > 60


def test_an_invite_code_never_reads_as_a_command_line_option() -> None:
    # About one draw in 64 starts with "-"; 2,000 draws meet one all but surely.
    codes = [new_code() for _ in range(2000)]
    assert all(len(code) == 16 and not code.startswith("-") for code in codes)
    assert len(set(codes)) == len(codes)
