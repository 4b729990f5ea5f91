"""Request bodies are capped (app/body_limit.py; issue #25, finding 1): a 5 MB JSON object of
300,000 keys sent to the planner's API held the server 16 s. Now any body past its route's
limit is a 413, as a page or as JSON, whether or not it declares its length."""

from __future__ import annotations

import json
from collections.abc import Iterator

from fastapi.testclient import TestClient

from app.body_limit import DEFAULT_BODY_BYTES, LARGER_BODIES, body_limit_of
from tests.utils import csrf_token, register

HOSTILE = json.dumps({f"k{i}": i for i in range(300_000)})


def test_a_huge_json_body_is_413_before_it_is_parsed(client: TestClient) -> None:
    for url in ("/api/calc/planner", "/api/calc/model/from-hf-config"):
        response = client.post(url, content=HOSTILE, headers={"content-type": "application/json"})
        assert response.status_code == 413
        assert response.json()["detail"].startswith("the request body is larger")


def test_a_body_without_a_length_is_counted_as_it_arrives(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:  # sent chunked: no Content-Length to refuse up front
        for _ in range(20):
            yield b" " * 10_000

    response = client.post(
        "/api/calc/planner", content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


def test_a_huge_form_is_a_413_page_in_the_layout(client: TestClient) -> None:
    data = {"username": "x" * DEFAULT_BODY_BYTES, "password": "y", "csrf_token": csrf_token(client)}
    response = client.post("/login", data=data, headers={"accept": "text/html"})
    assert response.status_code == 413
    assert "larger than this address takes (64 KiB)" in response.text
    assert "<nav" in response.text  # the site's layout, not a bare error


def test_a_body_under_the_limit_is_answered_as_before(client: TestClient) -> None:
    body = json.dumps({"preset": "llama3-8b", "nodes": 1})
    response = client.post(
        "/api/calc/planner", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200


def test_routes_that_take_a_file_take_more(client: TestClient) -> None:
    assert body_limit_of("/progress/import") > 20 * 1024 * 1024
    assert all(limit > DEFAULT_BODY_BYTES for limit in LARGER_BODIES.values())
    # An import of 100 KB is read and judged, not refused for its size.
    register(client)
    files = {"file": ("progress.json", b"{" + b" " * 100_000 + b"}", "application/json")}
    response = client.post("/progress/import", files=files)
    assert response.status_code != 413
