"""Study groups: create, join by code, opt-in sharing, the weekly summary; only members see
a group, and nobody changes another's sharing."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_in, log_out, register


def _create(client: TestClient, name: str = "Night owls") -> tuple[str, str]:
    response = client.post("/groups", data={"name": name}, follow_redirects=False)
    assert response.status_code == 303, response.text
    url = response.headers["location"]
    code = re.search(r'id="invite-code">([A-Z0-9]+)<', client.get(url).text).group(1)
    return url, code


def _switch(client: TestClient, username: str) -> None:
    log_out(client)
    register(client, username)


def test_members_see_only_what_sharers_opt_into(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    url, code = _create(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    _switch(quiz_client, "bob")
    joined = quiz_client.post("/groups/join", data={"invite_code": code.lower()})
    assert joined.status_code == 200 and str(joined.url).endswith(url)
    page = joined.text
    assert 'data-member="ada"' in page and 'data-member="bob"' in page
    assert page.count("Progress not shared.") == 2 and "memory-anatomy" not in page
    _switch(quiz_client, "ada2")  # a third user, not a member
    assert quiz_client.get(url).status_code == 404
    assert quiz_client.post(f"{url}/sharing", data={"share": "yes"}).status_code == 404
    log_out(quiz_client)
    log_in(quiz_client, "ada")
    quiz_client.post(f"{url}/sharing", data={"share": "yes"})
    page = quiz_client.get(url).text
    assert page.count("Progress not shared.") == 1  # bob still private
    assert 'data-card="memory-anatomy"' in page
    assert "1 answer (1 correct) from 1 sharing member" in " ".join(page.split())


def test_a_wrong_invite_code_is_a_422_with_a_message(quiz_client: TestClient) -> None:
    register(quiz_client)
    response = quiz_client.post("/groups/join", data={"invite_code": "NOPE1234"})
    assert response.status_code == 422 and "no group has that invite code" in response.text
    short = quiz_client.post("/groups", data={"name": "x"})
    assert short.status_code == 422 and "Group name" in short.text


def test_groups_need_a_login(quiz_client: TestClient) -> None:
    assert quiz_client.get("/groups/1", follow_redirects=False).status_code == 303


@pytest.mark.parametrize(
    "name",
    ["Night\u202eowls", "Night\u2066owls\u2069", "Night\nowls", "Night\x00owls", "owls\x7f"],
)
def test_a_group_name_with_control_or_direction_characters_is_refused(
    quiz_client: TestClient, name: str
) -> None:
    # Issue #25: a text-direction override in a name shows other members text reordered.
    register(quiz_client)
    response = quiz_client.post("/groups", data={"name": name}, follow_redirects=False)
    assert response.status_code == 422
    assert "must not contain control or text-direction characters" in response.text
    assert _create(quiz_client, "Night owls ✓ 夜猫子")[0].startswith("/groups/")
