"""Security headers on every response, and the session cookie's flags."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from tests.utils import make_settings, register


def test_pages_send_a_strict_content_security_policy(client: TestClient) -> None:
    response = client.get("/cards")
    csp = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == "'self'"  # no inline scripts, no eval
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"


def test_templates_hold_no_inline_script_or_handler() -> None:
    import re

    from app.config import ROOT_DIR

    for path in (ROOT_DIR / "templates").rglob("*.html"):
        text = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), path
        assert not re.search(r"\son[a-z]+\s*=", text), path
        assert "javascript:" not in text, path


def test_errors_and_static_files_get_the_headers_too(client: TestClient) -> None:
    assert "content-security-policy" in client.get("/no-such-page").headers
    assert "content-security-policy" in client.get("/static/css/app.css").headers


def test_session_cookie_is_httponly_and_samesite_lax(client: TestClient) -> None:
    response = client.get("/login")
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie


def test_session_cookie_is_secure_when_served_over_tls(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", cookie_secure=True)
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        cookie = client.get("/login").headers["set-cookie"].lower()
        assert "; secure" in cookie
        register(client)  # and the app works over https with it
        assert "ada" in client.get("/").text


def test_each_response_carries_a_request_id(client: TestClient) -> None:
    first = client.get("/healthz").headers["x-request-id"]
    assert len(first) == 16 and first != client.get("/healthz").headers["x-request-id"]
    echoed = client.get("/healthz", headers={"X-Request-ID": "from-the-proxy-1"})
    assert echoed.headers["x-request-id"] == "from-the-proxy-1"
