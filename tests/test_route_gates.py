"""Gated routers (app/route_gates.py): a gate says "no match" only where every route behind it
would, so each path reaches the route it reached without gates."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import APIRoute, _IncludedRouter
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from starlette.routing import Match

from app.config import Settings
from app.main import create_app
from app.route_gates import GatedRouter, first_segment
from tests.utils import make_settings


def _scope(path: str, method: str = "GET") -> dict[str, object]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": [],
            "query_string": b""}  # fmt: skip


def _route_paths(router: _IncludedRouter) -> list[tuple[str, str]]:
    found = []
    for candidate in router.effective_candidates():
        if isinstance(candidate, _IncludedRouter):
            found += _route_paths(candidate)
        elif isinstance(candidate.original_route, APIRoute):
            for method in candidate.original_route.methods:
                # Each parameter filled with a value of its kind's shape: digits fit int and str.
                found.append((method, re.sub(r"\{[^}]+\}", "7", candidate.path)))
    return found


def test_first_segment() -> None:
    assert first_segment("/calculators/memory") == "calculators"
    assert first_segment("/cards") == "cards"
    assert first_segment("/") == ""
    assert first_segment("") == ""


def test_every_route_answers_its_paths_through_its_gate(settings: Settings) -> None:
    app = create_app(settings)
    gates = [route for route in app.router.routes if isinstance(route, GatedRouter)]
    included = [route for route in app.router.routes if isinstance(route, _IncludedRouter)]
    assert gates and len(gates) == len(included)  # every router's paths start with a fixed word
    paths = [p for gate in gates for p in _route_paths(gate)]
    assert len(paths) > 80
    for method, path in paths:
        for candidate in (path, path + "/", path.rstrip("/") or "/"):
            for gate in gates:
                scope = _scope(candidate, method)
                ungated = _IncludedRouter.matches(gate, _scope(candidate, method))[0]
                assert gate.matches(scope)[0] == ungated, (gate.segments, method, candidate)


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> list[GatedRouter]:
    app = create_app(make_settings(tmp_path_factory.mktemp("gates") / "data"))
    return [route for route in app.router.routes if isinstance(route, GatedRouter)]


@given(
    st.lists(
        st.sampled_from(
            [
                "cards",
                "calculators",
                "quiz",
                "api",
                "calc",
                "admin",
                "x",
                "7",
                "",
                "static",
                "path",
                "demos",
                "memory",
            ]
        ),
        max_size=4,
    )
)
def test_any_path_matches_as_it_would_without_gates(
    gates: list[GatedRouter], segments: list[str]
) -> None:
    path = "/" + "/".join(segments)
    for gate in gates:
        assert gate.matches(_scope(path))[0] == _IncludedRouter.matches(gate, _scope(path))[0]


def test_pages_behind_gates_still_answer(settings: Settings) -> None:
    app = create_app(settings)
    with TestClient(app) as client:
        assert client.get("/").status_code == 200  # the home page, behind most routers
        assert client.get("/healthz").status_code in (200, 503)  # after every router
        assert client.get("/no-such-page").status_code == 404
        assert client.get("/calculators/memory").status_code == 200


def test_a_router_without_parameters_is_gated_by_its_exact_paths(
    gates: list[GatedRouter],
) -> None:
    exact = [gate for gate in gates if gate.paths is not None]
    assert len(exact) >= 9  # the calculators' routers among them
    planner = next(gate for gate in exact if "/calculators/planner/result" in gate.paths)
    assert planner.matches(_scope("/calculators/planner/result"))[0] == Match.FULL
    # Its first segment, not its path: passed over without trying a route.
    assert planner.rules_out("/calculators/memory")
    assert planner.matches(_scope("/calculators/memory"))[0] == Match.NONE


def test_a_request_is_matched_once_inside_its_router(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(settings)
    tried: list[str] = []
    original = _IncludedRouter._match

    def counting(self: _IncludedRouter, scope: dict) -> tuple:
        tried.append(scope["path"])
        return original(self, scope)

    with TestClient(app) as client:
        monkeypatch.setattr(_IncludedRouter, "_match", counting)
        assert client.get("/calculators/planner/result?preset=llama3-8b").status_code == 200
    assert tried == ["/calculators/planner/result"]
