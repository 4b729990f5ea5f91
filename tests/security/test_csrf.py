"""CSRF: every state-changing route needs the session's token, as a header or a form field."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.security import CSRF_EXEMPT_PREFIXES
from tests.utils import api_routes, csrf_token, register


def test_a_post_without_the_token_is_refused_with_a_clear_message(client: TestClient) -> None:
    client.get("/login")  # the session and its token exist; the form just lacks it
    response = client.post("/register", data={"username": "ada", "password": "correct horse"})
    assert response.status_code == 403
    assert "security token is missing or wrong" in response.text
    assert "<h1>Not done</h1>" in response.text


def test_a_wrong_token_is_refused_and_htmx_gets_a_fragment(client: TestClient) -> None:
    register(client)
    response = client.post(
        "/logout", headers={"X-CSRF-Token": "x" * 43, "HX-Request": "true"}, data={}
    )
    assert response.status_code == 403
    assert response.text.startswith('<div class="errors" role="alert">')
    assert "ada" in client.get("/").text  # still logged in


def test_a_token_from_another_session_is_refused(client: TestClient, settings) -> None:
    from app.main import create_app

    with TestClient(create_app(settings)) as other:
        foreign = csrf_token(other)
    client.get("/login")
    data = {"username": "ada", "password": "correct horse", "csrf_token": foreign}
    assert client.post("/register", data=data).status_code == 403


def test_the_header_alone_is_enough_as_htmx_sends_it(client: TestClient) -> None:
    token = csrf_token(client)
    response = client.post(
        "/register",
        data={"username": "ada", "password": "correct horse"},
        headers={"X-CSRF-Token": token},
        follow_redirects=False,
    )
    assert response.status_code == 303


def test_the_base_page_gives_htmx_the_token_through_an_inherited_header(client: TestClient) -> None:
    page = client.get("/cards").text
    # htmx 4 inherits attributes only when they say :inherited
    match = re.search(r"""<body hx-headers:inherited='\{"X-CSRF-Token": "([^"]+)"\}'>""", page)
    assert match, page[:2000]
    response = client.post(
        "/register",
        data={"username": "ada", "password": "correct horse"},
        headers={"X-CSRF-Token": match.group(1)},
        follow_redirects=False,
    )
    assert response.status_code == 303


def test_each_page_masks_the_token_anew_and_every_mask_is_accepted(client: TestClient) -> None:
    # Compressed pages must not carry a fixed secret (BREACH): the token differs on every
    # page, while each one still unmasks to the session's secret.
    tokens = [csrf_token(client) for _ in range(3)]
    assert len(set(tokens)) == 3
    register(client)
    for token in (csrf_token(client), csrf_token(client)):
        # register() set a header token on the client: this one replaces it.
        response = client.post(
            "/progress/settings", data={"new_per_day": 5}, headers={"X-CSRF-Token": token}
        )
        assert response.status_code == 200, response.text[:500]


def test_the_token_changes_at_login(client: TestClient) -> None:
    before = csrf_token(client)
    register(client)
    # The secret behind the token is new: a page from before the log-in no longer posts.
    # (register() set a header token on the client: each post here replaces it)
    stale = client.post("/logout", headers={"X-CSRF-Token": before}, follow_redirects=False)
    assert stale.status_code == 403
    fresh = client.post(
        "/logout", headers={"X-CSRF-Token": csrf_token(client)}, follow_redirects=False
    )
    assert fresh.status_code == 303


def test_every_form_that_posts_carries_the_token(client: TestClient) -> None:
    register(client)
    for path in ("/", "/login", "/register", "/quiz"):
        page = client.get(path).text
        for form in re.findall(r"<form[^>]*method=\"post\".*?</form>", page, flags=re.S):
            assert 'name="csrf_token"' in form, (path, form[:200])


def test_every_state_changing_route_is_guarded(client: TestClient) -> None:
    """Walks the app's routes: a POST/PUT/PATCH/DELETE without a token never reaches a route
    (except the pure calculator APIs, which read no session and change nothing)."""
    client.get("/login")
    checked = 0
    for route in api_routes(client.app.routes):
        for method in route.methods - {"GET", "HEAD", "OPTIONS"}:
            path = re.sub(r"\{[^}]+\}", "1", route.path)
            if path.startswith(CSRF_EXEMPT_PREFIXES):
                continue
            response = client.request(method, path, data={"x": "1"})
            assert response.status_code == 403, (method, path, response.status_code)
            checked += 1
    assert checked >= 5  # register, login, logout, quiz answer, the admin actions


def test_the_calculator_api_needs_no_token_but_still_refuses_other_sites(
    client: TestClient,
) -> None:
    body = {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
    }
    assert client.post("/api/calc/model/from-hf-config", json=body).status_code == 200
    refused = client.post(
        "/api/calc/model/from-hf-config", json=body, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert refused.status_code == 403
