"""Register, log in, log out: argon2 hashes, a signed cookie holding the user id and tokens."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import quote

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import User
from tests.utils import csrf_token, log_out, register


def _session_payload(client: TestClient) -> dict:
    cookie = client.cookies["shardlab_session"]
    return json.loads(base64.b64decode(cookie.split(".")[0] + "=="))


def test_register_logs_in_and_stores_an_argon2_hash(client: TestClient) -> None:
    register(client, "ada", "correct horse")
    assert "ada" in client.get("/").text
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User).where(User.username == "ada")).one()
    assert user.password_hash.startswith("$argon2id$")
    assert "correct horse" not in user.password_hash


def test_session_cookie_holds_the_user_id_the_session_token_and_the_csrf_token(
    client: TestClient,
) -> None:
    register(client)
    payload = _session_payload(client)
    assert set(payload) == {"user_id", "session_token", "csrf"}
    assert payload["user_id"] == 1 and len(payload["csrf"]) >= 40
    assert len(payload["session_token"]) >= 40  # 32 random bytes, URL-safe base64


def test_log_out_then_log_in_again(client: TestClient) -> None:
    register(client, "ada", "correct horse")
    log_out(client)
    assert client.get("/quiz", follow_redirects=False).status_code == 303
    token = csrf_token(client)
    wrong = client.post(
        "/login", data={"username": "ada", "password": "wrong password", "csrf_token": token}
    )
    assert wrong.status_code == 422 and "Wrong username or password" in wrong.text
    ok = client.post(
        "/login",
        data={"username": "ada", "password": "correct horse", "csrf_token": token},
        follow_redirects=False,
    )
    assert ok.status_code == 303


def test_register_errors_are_shown_inline(client: TestClient) -> None:
    short = client.post(
        "/register", data={"username": "ab", "password": "short", "csrf_token": csrf_token(client)}
    )
    assert short.status_code == 422
    assert "Username: " in short.text and "Password: " in short.text
    register(client, "ada")
    log_out(client)
    taken = client.post(
        "/register",
        data={"username": "ada", "password": "another password", "csrf_token": csrf_token(client)},
    )
    assert taken.status_code == 422 and "already taken" in taken.text


def test_missing_fields_get_the_form_not_a_500(client: TestClient) -> None:
    response = client.post("/register", data={"csrf_token": csrf_token(client)})
    assert response.status_code == 422 and "is required" in response.text


def test_next_only_goes_to_this_site(client: TestClient) -> None:
    response = client.post(
        "/register",
        data={
            "username": "eve",
            "password": "password1",
            "next": "https://evil.example/",
            "csrf_token": csrf_token(client),
        },
        follow_redirects=False,
    )
    assert response.headers["location"] == "/quiz"


def test_a_backslash_path_is_not_a_way_off_the_site(client: TestClient) -> None:
    # Browsers read "/\\evil.example" as "//evil.example".
    response = client.post(
        "/register",
        data={"username": "eve", "password": "password1", "next": "/\\evil.example/",
              "csrf_token": csrf_token(client)},
        follow_redirects=False,
    )  # fmt: skip
    assert response.headers["location"] == "/quiz"


def test_a_step_s_questions_come_back_after_registering(client: TestClient) -> None:
    # issue #29: signed out on /path/2, "Answer the questions" went to /login?next=/quiz with
    # no word why, and registering then gave the all-topics review.
    asked = "/quiz?mode=practice&topic=zero-stages"
    sent = client.get(asked, follow_redirects=False)
    assert sent.status_code == 303
    assert sent.headers["location"] == "/login?next=" + quote(asked, safe="/")
    login = client.get(sent.headers["location"])
    assert 'id="login-why"' in login.text and "go straight back" in login.text
    assert 'id="login-why"' not in client.get("/login").text
    register_link = re.search(r'href="(/register\?next=[^"]+)"', login.text).group(1)
    form = client.get(html.unescape(register_link))
    next_value = re.search(r'name="next" value="([^"]*)"', form.text).group(1)
    assert html.unescape(next_value) == asked
    done = client.post(
        "/register",
        data={"username": "ada", "password": "correct horse", "next": html.unescape(next_value),
              "csrf_token": csrf_token(client)},
        follow_redirects=False,
    )  # fmt: skip
    assert done.headers["location"] == asked
    assert client.get(asked).status_code == 200


def test_cross_site_form_posts_are_refused(client: TestClient) -> None:
    token = csrf_token(client)
    response = client.post(
        "/register",
        data={"username": "mallory", "password": "password1", "csrf_token": token},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert response.status_code == 403
    response = client.post(
        "/login",
        data={"username": "x", "password": "y", "csrf_token": token},
        headers={"Origin": "https://evil.example"},
    )
    assert response.status_code == 403
