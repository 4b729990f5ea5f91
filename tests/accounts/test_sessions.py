"""Sessions end on the server (issue #25, finding 5): a copy of the cookie taken before a
log-out, a password change or the account page's "sign out" reads nothing afterwards."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.accounts.sessions import UserSession
from tests.utils import csrf_token, log_in, log_out, refresh_csrf, register

COOKIE = "shardlab_session"
PRIVATE_PAGES = ("/progress", "/progress/export")


def another_browser(client: TestClient, cookie: str | None = None) -> TestClient:
    """A second browser on the same running app, with its own cookie jar (holding `cookie`)."""
    browser = TestClient(client.app, cookies={COOKIE: cookie} if cookie else None)
    refresh_csrf(browser)
    return browser


def reads_private_pages(client: TestClient, cookie: str) -> bool:
    """Whether `cookie` alone opens the progress page and the export; where it does not, both
    answer with the log-in redirect."""
    browser = another_browser(client, cookie)
    answers = [browser.get(path, follow_redirects=False) for path in PRIVATE_PAGES]
    if all(answer.status_code == 200 for answer in answers):
        return True
    for path, answer in zip(PRIVATE_PAGES, answers, strict=True):
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/login?next={path}", path
    return False


def session_rows(client: TestClient) -> list[UserSession]:
    with Session(client.app.state.engine) as session:
        return list(session.exec(select(UserSession).order_by(col(UserSession.id))))


def cookie_token(cookie: str) -> str:
    """The session token in a signed cookie (its payload is base64 JSON, signed, not hidden)."""
    return json.loads(base64.b64decode(cookie.split(".")[0] + "=="))["session_token"]


def change_password(client: TestClient, current: str, new: str, again: str | None = None):  # noqa: ANN201
    return client.post(
        "/account/password",
        data={
            "current_password": current,
            "new_password": new,
            "new_password_again": new if again is None else again,
        },
        follow_redirects=False,
    )


def test_a_cookie_copied_before_log_out_reads_nothing_after(client: TestClient) -> None:
    register(client, "ada")
    copied = client.cookies[COOKIE]
    assert reads_private_pages(client, copied)  # the finding: this held for 14 days
    log_out(client)
    assert not reads_private_pages(client, copied)
    (row,) = session_rows(client)
    assert row.ended_at is not None


def test_an_ended_session_shows_no_user_on_pages_that_need_none(client: TestClient) -> None:
    register(client, "ada")
    copied = client.cookies[COOKIE]
    log_out(client)
    # "/" asks for no user; the header still must not name one from an ended session.
    page = another_browser(client, copied).get("/")
    assert page.status_code == 200
    assert 'class="who"' not in page.text and 'href="/login"' in page.text


def test_the_table_keeps_only_a_hash_of_the_cookies_token(client: TestClient) -> None:
    register(client, "ada")
    token = cookie_token(client.cookies[COOKIE])
    (row,) = session_rows(client)
    assert row.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert token not in row.model_dump_json()


def test_a_password_change_ends_the_other_sessions_and_keeps_this_one(
    client: TestClient,
) -> None:
    register(client, "ada", "correct horse")
    laptop = client.cookies[COOKIE]
    phone_browser = another_browser(client)
    log_in(phone_browser, "ada", "correct horse")
    phone = phone_browser.cookies[COOKIE]
    assert reads_private_pages(client, phone)

    response = change_password(client, "correct horse", "battery staple")
    assert response.status_code == 303 and response.headers["location"] == "/account?done=password"
    assert "Your password is changed" in client.get("/account?done=password").text
    assert client.get("/progress", follow_redirects=False).status_code == 200
    assert reads_private_pages(client, laptop)
    assert not reads_private_pages(client, phone)

    log_out(client)
    wrong = client.post(
        "/login",
        data={"username": "ada", "password": "correct horse", "csrf_token": csrf_token(client)},
    )
    assert wrong.status_code == 422
    log_in(client, "ada", "battery staple")


def test_a_refused_password_change_says_why_and_ends_nothing(client: TestClient) -> None:
    register(client, "ada", "correct horse")
    phone_browser = another_browser(client)
    log_in(phone_browser, "ada", "correct horse")
    phone = phone_browser.cookies[COOKIE]

    wrong = change_password(client, "not my password", "battery staple")
    assert wrong.status_code == 422 and "Current password: wrong password" in wrong.text
    differ = change_password(client, "correct horse", "battery staple", "battery stable")
    assert differ.status_code == 422
    assert "The new password and its repetition differ" in differ.text
    short = change_password(client, "correct horse", "short")
    assert short.status_code == 422 and "New password: must be at least 8 characters" in short.text
    missing = change_password(client, "", "battery staple")
    assert missing.status_code == 422 and "Current password: is required" in missing.text

    assert reads_private_pages(client, phone)
    log_out(client)
    log_in(client, "ada", "correct horse")


def test_the_account_page_needs_a_user(client: TestClient) -> None:
    response = client.get("/account", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login?next=/account"


def test_the_account_page_lists_the_live_sessions_and_marks_this_one(client: TestClient) -> None:
    register(client, "ada", "correct horse")
    phone_browser = another_browser(client)
    phone_browser.headers["User-Agent"] = "Phone browser/1.0"
    log_in(phone_browser, "ada", "correct horse")
    old_browser = another_browser(client)
    log_in(old_browser, "ada", "correct horse")
    log_out(old_browser)  # ended: not listed

    page = client.get("/account")
    assert page.status_code == 200 and 'href="/account"' in page.text
    rows = re.findall(r'<tr id="session-(\d+)"( aria-current="true")?>', page.text)
    assert rows == [("2", ""), ("1", ' aria-current="true"')]  # the most recently seen first
    assert page.text.count("This session") == 1
    assert "Phone browser/1.0" in page.text and "testclient" in page.text
    assert 'action="/account/sessions/2/end"' in page.text
    assert 'action="/account/sessions/1/end"' not in page.text  # this one: "Log out" instead
    assert "Sign out all other sessions" in page.text


def test_signing_out_one_session_from_the_account_page(client: TestClient) -> None:
    register(client, "ada", "correct horse")
    phone_browser = another_browser(client)
    log_in(phone_browser, "ada", "correct horse")
    phone = phone_browser.cookies[COOKIE]
    phone_id = session_rows(client)[-1].id

    response = client.post(f"/account/sessions/{phone_id}/end", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/account?done=ended"
    assert not reads_private_pages(client, phone)
    assert client.get("/progress", follow_redirects=False).status_code == 200
    assert f'id="session-{phone_id}"' not in client.get("/account").text


def test_signing_out_all_other_sessions_keeps_this_one(client: TestClient) -> None:
    register(client, "ada", "correct horse")
    others = []
    for _ in range(2):
        browser = another_browser(client)
        log_in(browser, "ada", "correct horse")
        others.append(browser.cookies[COOKIE])
    response = client.post("/account/sessions/others/end", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/account?done=others"
    assert not any(reads_private_pages(client, cookie) for cookie in others)
    assert reads_private_pages(client, client.cookies[COOKIE])
    assert len(re.findall(r'<tr id="session-', client.get("/account").text)) == 1


def test_another_users_session_cannot_be_ended_by_its_id(client: TestClient) -> None:
    register(client, "ada")
    ada = client.cookies[COOKIE]
    (ada_row,) = session_rows(client)
    bob_browser = another_browser(client)
    register(bob_browser, "bob")
    for session_id in (ada_row.id, 999, 2**70):
        response = bob_browser.post(f"/account/sessions/{session_id}/end")
        assert response.status_code == 404, session_id
    assert reads_private_pages(client, ada)
    assert session_rows(client)[0].ended_at is None


def test_last_seen_is_written_at_most_every_few_minutes(client: TestClient) -> None:
    register(client, "ada")
    (row,) = session_rows(client)
    client.get("/progress")
    assert session_rows(client)[0].last_seen_at == row.last_seen_at  # no write per request
    long_ago = row.last_seen_at - timedelta(minutes=10)
    with Session(client.app.state.engine) as session:
        stored = session.get(UserSession, row.id)
        stored.last_seen_at = long_ago
        session.add(stored)
        session.commit()
    client.get("/progress")
    assert session_rows(client)[0].last_seen_at > row.last_seen_at
