"""One username whatever its case (#25): "Ada" cannot register beside "ada", and "ADA" logs
in as "ada", on the web and in the admin CLI; the database itself refuses a second spelling."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from app.accounts.models import User
from app.admin.service import AdminError, create_user, find_user
from tests.utils import csrf_token, log_in, log_out, register


def _register_form(client: TestClient, username: str):
    data = {"username": username, "password": "another password", "csrf_token": csrf_token(client)}
    return client.post("/register", data=data, follow_redirects=False)


def test_a_name_that_differs_only_in_case_is_taken(client: TestClient) -> None:
    register(client, "ada")
    log_out(client)
    for spelling in ("Ada", "ADA", " aDa "):
        taken = _register_form(client, spelling)
        assert taken.status_code == 422 and "already taken" in taken.text, spelling
    with Session(client.app.state.engine) as session:
        assert [u.username for u in session.exec(select(User))] == ["ada"]


def test_log_in_finds_the_account_whatever_the_case_typed(client: TestClient) -> None:
    register(client, "ada")
    log_out(client)
    log_in(client, "ADA")
    assert '<span class="who">ada</span>' in client.get("/").text


def test_the_database_refuses_a_second_spelling(client: TestClient) -> None:
    register(client, "ada")
    with Session(client.app.state.engine) as session:
        session.add(User(username="AdA", password_hash="x"))
        with pytest.raises(IntegrityError, match="lower"):
            session.commit()


def test_the_admin_cli_finds_and_refuses_names_whatever_their_case(client: TestClient) -> None:
    register(client, "ada")
    with Session(client.app.state.engine) as session:
        assert find_user(session, " ADA ").username == "ada"
        with pytest.raises(AdminError, match="exists already"):
            create_user(session, "Ada", "a long password")
