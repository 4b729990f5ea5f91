"""Error pages: a browser gets the site's layout with words and a way back, htmx a fragment,
/api/ (and clients that do not ask for HTML) FastAPI's JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
from fastapi import Form
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient

from app.logs import configure_logging
from app.main import create_app
from app.ratelimit import SlidingWindow, parse_rate
from tests.utils import make_settings, refresh_csrf

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
HTMX = {"HX-Request": "true", "Accept": "text/html"}


def _items(count: int) -> str:
    return f"<p>{count} items</p>"


def _named(name: Annotated[str, Form()]) -> str:
    return f"<p>{name}</p>"


def _crash() -> None:
    raise RuntimeError("secret-internal-detail")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The real app (with no room in the demo line) plus routes only these tests have."""
    app = create_app(make_settings(tmp_path / "data", demo_queue_max=0))
    app.add_api_route("/test/items", _items, response_class=HTMLResponse)
    app.add_api_route("/test/named", _named, methods=["POST"], response_class=HTMLResponse)
    app.add_api_route("/test/crash", _crash)
    app.add_api_route("/api/test/crash", _crash)
    with TestClient(app) as test_client:
        yield test_client


def _in_layout(page: str) -> bool:
    return '<header class="site">' in page and ">Cards</a>" in page and "<footer" in page


def test_a_missing_page_is_a_page_with_a_way_home(client: TestClient) -> None:
    response = client.get("/no-such-page", headers=BROWSER)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "content-security-policy" in response.headers
    assert _in_layout(response.text)
    assert "<h1>Page not found</h1>" in response.text
    assert '<a href="/">start from the home page</a>' in response.text
    assert 'action="/cards/search"' in response.text and 'href="/cards/map"' in response.text


def test_a_missing_card_page_says_which_card(client: TestClient) -> None:
    response = client.get("/cards/no-such-card", headers=BROWSER)
    assert response.status_code == 404
    assert "<p>No card called &#39;no-such-card&#39;</p>" in response.text


def test_htmx_gets_a_fragment_to_swap_in(client: TestClient) -> None:
    response = client.get("/no-such-page", headers=HTMX)
    assert response.status_code == 404
    assert response.text.startswith('<div class="errors" role="alert">')
    assert "<html" not in response.text and "no page at this address" in response.text


def test_api_errors_stay_json_even_for_a_browser(client: TestClient) -> None:
    response = client.get("/api/calc/no-such-calculator", headers=BROWSER)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_clients_that_do_not_ask_for_html_keep_json(client: TestClient) -> None:
    response = client.get("/no-such-page", headers={"Accept": "application/json"})
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_a_get_on_a_post_only_route_names_the_methods_it_takes(client: TestClient) -> None:
    response = client.get("/logout", headers=BROWSER)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert _in_layout(response.text)
    assert "<p>This address does not take GET requests.</p>" in response.text
    assert "It takes POST: it is where a form sends what you typed" in response.text


def test_a_bad_query_on_a_page_lists_what_was_wrong(client: TestClient) -> None:
    response = client.get("/test/items", params={"count": "many"}, headers=BROWSER)
    assert response.status_code == 422
    assert _in_layout(response.text)
    assert "<li>count: must be a whole number</li>" in response.text


def test_a_form_missing_a_field_lists_it(client: TestClient) -> None:
    refresh_csrf(client)
    response = client.post("/test/named", data={}, headers=BROWSER)
    assert response.status_code == 422
    assert "<li>name: is required</li>" in response.text


def test_a_bad_query_on_the_api_is_fastapis_json(client: TestClient) -> None:
    response = client.get("/api/calc/memory", params={"dp_degree": "x"}, headers=BROWSER)
    assert response.status_code == 422
    dp_degree = [e for e in response.json()["detail"] if e["loc"] == ["query", "dp_degree"]]
    assert dp_degree[0]["type"] == "int_parsing"


def test_a_crash_is_a_logged_500_page_without_the_traceback(
    client: TestClient, capfd: pytest.CaptureFixture[str]
) -> None:
    configure_logging("json", "INFO")  # onto the stderr capfd reads, not the one at setup
    response = client.get("/test/crash", headers=BROWSER)
    assert response.status_code == 500
    assert _in_layout(response.text)
    assert "<h1>Something broke</h1>" in response.text
    assert "Traceback" not in response.text and "secret-internal-detail" not in response.text
    rid = response.headers["x-request-id"]
    assert f"logged as request {rid}." in response.text

    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line[:1] == "{"]
    ours = [line for line in lines if line["request_id"] == rid]
    crash = next(line for line in ours if line["logger"] == "app.errors")
    assert "RuntimeError: secret-internal-detail" in crash["exception"]
    access = next(line for line in ours if line["logger"] == "shardlab.access")
    assert (access["status"], access["level"]) == (500, "ERROR")


def test_a_client_gone_before_its_form_arrived_is_a_499_not_a_crash(
    client: TestClient, capfd: pytest.CaptureFixture[str]
) -> None:
    """A learner's browser that gave up waiting closes the connection while the server still
    waits for the form: under 500 learners, every such answer was logged as a crash (500)."""
    configure_logging("json", "INFO")
    body = b"item_id=fx-single&option=0"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/quiz/answer",
             "raw_path": b"/quiz/answer", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"content-length", str(len(body)).encode()),
                         (b"content-type", b"application/x-www-form-urlencoded")],
             "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
             "state": {}}  # fmt: skip
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    client.portal.call(client.app, scope, receive, send)
    assert sent[0]["status"] == 499, sent
    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line[:1] == "{"]
    assert not [line for line in lines if line["level"] == "ERROR"], lines
    assert any(line["message"] == "client went away: POST /quiz/answer" for line in lines)


def test_a_crash_under_the_api_is_json(client: TestClient) -> None:
    response = client.get("/api/test/crash", headers=BROWSER)
    assert response.status_code == 500
    assert response.json() == {"detail": "Internal Server Error"}


def test_a_busy_demo_worker_is_a_503_page_that_offers_to_try_again(client: TestClient) -> None:
    """demo_queue_max=0: the line is always full, so no ranks need to start."""
    url = "/demos/all-reduce/run?size_mib=1&iterations=1"
    response = client.get(url, headers=BROWSER)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "60"
    assert _in_layout(response.text)
    assert "The demo worker is busy: 0 run(s) are already waiting" in response.text
    assert f'then <a href="{url.replace("&", "&amp;")}">try again</a>' in response.text


def test_htmx_keeps_the_run_panels_own_503_fragment(client: TestClient) -> None:
    response = client.get("/demos/all-reduce/run?size_mib=1&iterations=1", headers=HTMX)
    assert response.status_code == 503
    assert response.text.startswith('<div class="errors" role="alert"><strong>Can\'t run that:')


def test_a_rate_limited_demo_launch_is_a_429_page_in_the_layout(client: TestClient) -> None:
    limiter = SlidingWindow(client.app.state.engine, "demo", parse_rate("1/hour"))
    limiter.record("address:testclient")  # the one launch this hour
    client.app.state.limits["demo"] = limiter
    response = client.get("/demos/all-reduce/run?size_mib=1&iterations=1", headers=BROWSER)
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) > 0
    assert _in_layout(response.text)
    assert "<h1>Not done</h1>" in response.text and "Too many demo launches" in response.text
