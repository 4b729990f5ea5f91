"""The admin page: admins only; it shows the worker, recent runs and users, and acts on them."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.invites import invite_problem, make_invite
from app.accounts.models import Invite, InviteUse, User
from app.live.models import DemoRun
from tests.utils import log_out, register

ACTIONS = [
    ("/admin/users/1/disabled", {"disabled": "true"}),
    ("/admin/invites", {"days": "7"}),
    ("/admin/invites/1/revoke", {}),
]


def _make_admin(client: TestClient, username: str) -> None:
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        user.is_admin = True
        session.add(user)
        session.commit()


def test_anonymous_users_are_sent_to_log_in(client: TestClient) -> None:
    response = client.get("/admin", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login?next=/admin"


def test_non_admins_get_403_on_the_page_and_every_action(client: TestClient) -> None:
    register(client, "ada")
    register_other = client.get("/admin")
    assert register_other.status_code == 403 and "Users" not in register_other.text
    for path, data in ACTIONS:
        assert client.post(path, data=data).status_code == 403, path
    with Session(client.app.state.engine) as session:
        assert not session.exec(select(User)).one().disabled


def test_anonymous_actions_are_refused(client: TestClient) -> None:
    register(client, "ada")
    log_out(client)  # a session with a valid token, but no user
    for path, data in ACTIONS:
        response = client.post(path, data=data, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/login")


def test_the_admin_sees_worker_runs_and_users(client: TestClient) -> None:
    register(client, "root")
    _make_admin(client, "root")
    with Session(client.app.state.engine) as session:
        session.add(
            DemoRun(
                id="r1",
                demo="all-reduce",
                params={"size_mib": 4},
                user_id=1,
                status="failed",
                message="rank 1 died",
            )
        )
        session.commit()
    page = client.get("/admin")
    assert page.status_code == 200
    assert 'id="worker-status" role="alert">Unavailable' in page.text  # no worker in tests
    assert "rank 1 died" in page.text and "all-reduce" in page.text
    assert '<tr id="user-1">' in page.text and ">Admin</a>" in page.text


def test_the_admin_disables_and_enables_a_user_with_htmx(client: TestClient) -> None:
    register(client, "ada")
    log_out(client)
    register(client, "root")
    _make_admin(client, "root")
    row = client.post(
        "/admin/users/1/disabled", data={"disabled": "true"}, headers={"HX-Request": "true"}
    )
    assert row.status_code == 200
    assert row.text.startswith('<tr id="user-1">') and ">disabled<" in row.text
    with Session(client.app.state.engine) as session:
        assert session.get(User, 1).disabled
    client.post("/admin/users/1/disabled", data={"disabled": "false"})
    with Session(client.app.state.engine) as session:
        assert not session.get(User, 1).disabled


def test_an_admin_cannot_disable_themselves(client: TestClient) -> None:
    register(client, "root")
    _make_admin(client, "root")
    assert client.post("/admin/users/1/disabled", data={"disabled": "true"}).status_code == 422


def test_the_admin_makes_an_invite_code_that_registration_accepts(client: TestClient) -> None:
    register(client, "root")
    _make_admin(client, "root")
    response = client.post(
        "/admin/invites", data={"days": "3", "uses": "2"}, headers={"HX-Request": "true"}
    )
    code = response.text.split('<code id="invite-code">')[1].split("</code>")[0]
    assert "good for 2 accounts" in response.text
    assert f"/register?invite={code}" in response.text
    # The list comes along, swapped out of band, with the new code in it.
    assert '<div id="invite-table" class="table-wrap" hx-swap-oob="true">' in response.text
    assert '<tr id="invite-1">' in response.text
    with Session(client.app.state.engine) as session:
        assert invite_problem(session, code) is None
        invite = session.exec(select(Invite)).one()
        assert (invite.max_uses, invite.created_by) == (2, 1)
    assert client.post("/admin/invites", data={"days": "0"}).status_code == 422
    assert client.post("/admin/invites", data={"days": "7", "uses": "101"}).status_code == 422


def _row(page: str, invite_id: int) -> str:
    start = page.index(f'<tr id="invite-{invite_id}">')
    return page[start : page.index("</tr>", start)]


def test_the_admin_page_lists_invites_with_who_used_them(client: TestClient) -> None:
    register(client, "root")
    _make_admin(client, "root")
    with Session(client.app.state.engine) as session:
        used = make_invite(session, 1, days=7)
        make_invite(session, None, days=7, max_uses=5)
        session.add(User(username="ada", password_hash="x"))
        session.add(InviteUse(invite_id=used.id, user_id=2))
        used.uses = 1
        session.add(used)
        session.commit()
    page = client.get("/admin").text
    first, second = _row(page, 1), _row(page, 2)
    assert "<td>root</td>" in first and "<td>1/1</td>" in first and "<td>ada</td>" in first
    assert "<td>used up</td>" in first and "Revoke" not in first
    assert "<td>CLI</td>" in second and "<td>0/5</td>" in second and "<td>active</td>" in second
    assert 'hx-post="/admin/invites/2/revoke"' in second and 'name="csrf_token"' in second
    assert page.index('<tr id="invite-2">') < page.index('<tr id="invite-1">')  # newest first


def test_the_admin_revokes_an_invite_with_htmx(client: TestClient) -> None:
    register(client, "root")
    _make_admin(client, "root")
    with Session(client.app.state.engine) as session:
        code = make_invite(session, 1, days=7).code
    row = client.post("/admin/invites/1/revoke", headers={"HX-Request": "true"})
    assert row.status_code == 200
    assert row.text.startswith('<tr id="invite-1">') and "<td>revoked</td>" in row.text
    assert "Revoke" not in row.text
    with Session(client.app.state.engine) as session:
        assert "withdrawn by the admin" in invite_problem(session, code)
    assert client.post("/admin/invites/9/revoke").status_code == 404
    plain = client.post("/admin/invites/1/revoke", follow_redirects=False)
    assert plain.status_code == 303 and plain.headers["location"] == "/admin"
