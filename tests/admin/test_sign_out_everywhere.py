"""An admin ends a user's sessions (issue #25, finding 5): "sign out everywhere" on the admin
page, disabling (even if enabled again), and a password reset from the CLI."""

from __future__ import annotations

import io
import sys

import pytest
from fastapi.testclient import TestClient

from app.admin.__main__ import main
from app.config import Settings
from tests.accounts.test_sessions import COOKIE, another_browser, reads_private_pages
from tests.admin.test_admin_page import _make_admin
from tests.utils import log_in, register


def ada_and_an_admin(client: TestClient) -> tuple[str, TestClient]:
    """Ada signed in on `client` (her cookie); root, an admin, signed in on another browser."""
    register(client, "ada", "correct horse")
    admin = another_browser(client)
    register(admin, "root")
    _make_admin(admin, "root")
    return client.cookies[COOKIE], admin


def test_the_admin_signs_a_user_out_everywhere(client: TestClient) -> None:
    ada, admin = ada_and_an_admin(client)
    phone_browser = another_browser(client)
    log_in(phone_browser, "ada", "correct horse")
    phone = phone_browser.cookies[COOKIE]
    assert 'action="/admin/users/1/sessions/end"' in admin.get("/admin").text

    row = admin.post("/admin/users/1/sessions/end", headers={"HX-Request": "true"})
    assert row.status_code == 200
    assert row.text.startswith('<tr id="user-1">') and "2 sessions ended" in row.text
    assert not reads_private_pages(client, ada) and not reads_private_pages(client, phone)
    assert reads_private_pages(client, admin.cookies[COOKIE])  # only ada's ended
    log_in(client, "ada", "correct horse")  # she can log in again at once
    assert reads_private_pages(client, client.cookies[COOKIE])


def test_sign_out_everywhere_is_for_admins_only(client: TestClient) -> None:
    register(client, "ada")
    bob = another_browser(client)
    register(bob, "bob")
    assert bob.post("/admin/users/1/sessions/end").status_code == 403
    assert reads_private_pages(client, client.cookies[COOKIE])
    anonymous = another_browser(client)
    response = anonymous.post("/admin/users/1/sessions/end", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/login")


def test_sign_out_everywhere_for_an_unknown_user_is_a_404(client: TestClient) -> None:
    _, admin = ada_and_an_admin(client)
    assert admin.post("/admin/users/99/sessions/end").status_code == 404


def test_disabling_then_enabling_a_user_leaves_their_old_sessions_ended(
    client: TestClient,
) -> None:
    ada, admin = ada_and_an_admin(client)
    admin.post("/admin/users/1/disabled", data={"disabled": "true"})
    admin.post("/admin/users/1/disabled", data={"disabled": "false"})
    assert not reads_private_pages(client, ada)


@pytest.mark.parametrize(
    ("commands", "password"),
    [([["reset-password", "ada", "--password-stdin"]], "battery staple"),
     ([["disable", "ada"], ["enable", "ada"]], None)],
    ids=["reset-password", "disable-enable"],
)  # fmt: skip
def test_the_admin_cli_ends_the_users_sessions(
    client: TestClient,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    commands: list[list[str]],
    password: str | None,
) -> None:
    register(client, "ada", "correct horse")
    ada = client.cookies[COOKIE]
    # The CLI finds the app's database as a container's does: in the environment.
    monkeypatch.setenv("SHARDLAB_DATABASE_URL", settings.database_url)
    for command in commands:
        monkeypatch.setattr(sys, "stdin", io.StringIO(f"{password}\n"))
        assert main(["--data-dir", str(settings.data_dir), *command]) == 0
    assert not reads_private_pages(client, ada)
