"""A request's objects are freed when its response has gone, by reference counting, not left in
a reference cycle for the collector: under load, requests left in cycles made a full collection
every few seconds (30-90 ms each, every request in flight waiting), most of the pages' p99."""

from __future__ import annotations

import gc

from fastapi.testclient import TestClient
from starlette.requests import Request

from app.config import Settings
from app.main import create_app
from tests.utils import register

PATHS = [
    "/",
    "/cards/zero-stages",
    "/calculators/memory?params_b=70&dp_degree=8",
    "/calculators/memory/result?params_b=70&dp_degree=64",
    "/api/calc/memory?params=7e9&dp_degree=8",
]


def _requests_left_in_cycles(client: TestClient, paths: list[str]) -> int:
    """How many Request objects the collector finds unreachable after asking for `paths`."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(3):
            for path in paths:
                client.get(path)
        gc.collect()
        return sum(1 for thing in gc.garbage if isinstance(thing, Request))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_no_page_leaves_its_request_in_a_cycle(settings: Settings) -> None:
    with TestClient(create_app(settings)) as client:
        for path in PATHS:  # first views render and keep what later ones reuse
            assert client.get(path).status_code == 200
        assert _requests_left_in_cycles(client, PATHS) == 0


# A page rendered anew on every view (the dashboard, the progress page) still does: Jinja's
# macros and the render's context refer to each other, and the context holds the request.
def test_a_learners_kept_pages_leave_no_request_in_a_cycle(settings: Settings) -> None:
    with TestClient(create_app(settings)) as client:
        register(client, "ada")
        for path in PATHS[1:]:
            assert client.get(path).status_code == 200
        assert _requests_left_in_cycles(client, PATHS[1:]) == 0
