"""No request can freeze the server (issue #25, finding 1): while hostile requests arrive
without pause, another visitor's GET /cards still answers within 100 ms (the median of a dozen).

The server is the image's, in a process of its own, as deployed: one event loop, its thread
pool, one interpreter lock. In the test's own process the hostile clients would share a lock
with the server and the timings would say nothing.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.utils import deployed_server

CARDS_WITHIN_S = 0.100
VISITS = 12


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with deployed_server(tmp_path_factory.mktemp("server")) as base:
        httpx.get(f"{base}/cards", timeout=30)  # the first render compiles the templates
        yield base


def _hammered(base: str, hostile: Callable[[httpx.Client], httpx.Response], clients: int = 3):
    """Runs `hostile` from `clients` threads without pause while a visitor reads /cards;
    returns the visitor's times and the hostile answers' status codes."""
    stop = threading.Event()
    codes: list[int] = []

    def attack() -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            while not stop.is_set():
                codes.append(hostile(client).status_code)

    threads = [threading.Thread(target=attack) for _ in range(clients)]
    for thread in threads:
        thread.start()
    times = []
    try:
        time.sleep(0.5)  # the attack under way
        with httpx.Client(base_url=base, timeout=60) as visitor:
            for _ in range(VISITS):
                start = time.perf_counter()
                assert visitor.get("/cards").status_code == 200
                times.append(time.perf_counter() - start)
                time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return times, codes


def test_a_body_of_thousands_of_unknown_keys_is_refused_and_pages_answer(server: str) -> None:
    # 4,500 keys in 53 KB, inside the byte limit: before, each held the event loop 75 ms.
    body = json.dumps({f"k{i}": 0 for i in range(4500)})

    def post(client: httpx.Client) -> httpx.Response:
        headers = {"content-type": "application/json"}
        return client.post("/api/calc/planner", content=body, headers=headers)

    refused = post(httpx.Client(base_url=server, timeout=30))
    assert refused.status_code == 422
    assert "more than 512 values" in refused.json()["detail"]
    times, codes = _hammered(server, post)
    assert set(codes) == {422}
    assert statistics.median(times) < CARDS_WITHIN_S, times


def test_a_deeply_nested_body_is_refused(server: str) -> None:
    body = "[" * 5000 + "]" * 5000
    response = httpx.post(f"{server}/api/calc/planner", content=body,
                          headers={"content-type": "application/json"})  # fmt: skip
    assert response.status_code == 422
    assert "nests more than 32 levels" in response.json()["detail"]


def test_a_query_of_too_many_fields_is_refused(server: str) -> None:
    query = "&".join(f"k{i}=1" for i in range(1500))
    for path in ("/api/calc/planner", "/calculators/planner"):
        response = httpx.get(f"{server}{path}?{query}")
        assert response.status_code == 422, path
        assert "more than 200 query fields" in response.text


def test_cold_planner_searches_take_turns_off_the_event_loop(server: str) -> None:
    # Each efficiency is a search the server has not cached: 1.5 to 3 s for DeepSeek-V3 on one
    # core. Before, FastAPI ran it while validating the body, on the event loop.
    def post(client: httpx.Client) -> httpx.Response:
        body = {"run": "deepseek-v3", "matmul_efficiency": round(random.uniform(0.3, 0.9), 6)}
        return client.post("/api/calc/planner", json=body)

    times, codes = _hammered(server, post)
    assert 200 in codes
    assert set(codes) <= {200, 503}  # a search that waited too long for its turn: try again
    assert statistics.median(times) < CARDS_WITHIN_S, times


def test_a_full_line_of_heavy_work_is_told_to_come_back(server: str, tmp_path: Path) -> None:
    def post(index: int) -> httpx.Response:
        body = {"run": "deepseek-v3", "matmul_efficiency": 0.3 + index / 1000}
        return httpx.post(f"{server}/api/calc/planner", json=body, timeout=120)

    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda i=i: answers.append(post(i))) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    busy = [a for a in answers if a.status_code == 503]
    assert {a.status_code for a in answers} <= {200, 503}
    # From one address, two at a time compute or wait; the rest are told to come back.
    assert len(busy) >= 24 - 2 - 8, "24 cold searches at once from one address"
    assert all(int(a.headers["Retry-After"]) > 0 for a in busy)
    assert "still computing" in busy[0].json()["detail"]
