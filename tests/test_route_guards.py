"""The checks a request passes before its route (app/route_guards.py): the CSRF token on every
state-changing route and on no other, the query bound and the ended-session check for every
routed request, each refusal answered by the app's own handlers."""

from __future__ import annotations

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.accounts import sessions
from app.config import Settings
from app.main import create_app
from app.request_shape import MAX_QUERY_FIELDS
from app.route_guards import GuardedRoute, _api_routes, guard_routes, unguarded_routes
from app.security import require_csrf_token
from tests.accounts.test_one_session_read import session_lookups, statements
from tests.utils import make_settings, register


def _checks_token(route: object) -> bool:
    return any(d.call is require_csrf_token for d in route.dependant.dependencies)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(make_settings(tmp_path_factory.mktemp("guards")))


def test_every_state_changing_route_checks_the_token_and_no_read_does(app: FastAPI) -> None:
    routes = list(_api_routes(app.router.routes))
    changing = [r for r in routes if r.methods - {"GET", "HEAD", "OPTIONS"}]
    reading = [r for r in routes if not r.methods - {"GET", "HEAD", "OPTIONS"}]
    assert len(changing) > 30 and len(reading) > 50
    assert all(_checks_token(r) for r in changing)
    assert not any(_checks_token(r) for r in reading)
    assert unguarded_routes(app) == []


def test_an_app_with_an_unguarded_post_route_does_not_start() -> None:
    careless, careful = APIRouter(), APIRouter(route_class=GuardedRoute)

    @careless.post("/notes")
    def add_note() -> None: ...

    @careful.post("/tasks")
    def add_task() -> None: ...

    app = FastAPI()
    app.include_router(careful)
    guard_routes(FastAPI())  # nothing to guard is fine
    app.include_router(careless)
    with pytest.raises(RuntimeError, match=r"POST /notes"):
        guard_routes(app)


def test_a_post_without_the_token_is_refused_and_a_get_needs_none(settings: Settings) -> None:
    with TestClient(create_app(settings)) as client:
        assert client.get("/cards").status_code == 200
        refused = client.post("/plan", data={"minutes_per_day": "30"})
        assert refused.status_code == 403
        assert "security token" in refused.text


def test_the_query_bound_answers_with_the_apps_own_refusal(settings: Settings) -> None:
    fields = "&".join(f"k{i}=1" for i in range(MAX_QUERY_FIELDS + 1))
    with TestClient(create_app(settings)) as client:
        page = client.get(f"/cards?{fields}", headers={"accept": "text/html"})
        assert page.status_code == 422 and "text/html" in page.headers["content-type"]
        api = client.get(f"/api/calc/memory?{fields}")
        assert api.status_code == 422
        assert f"more than {MAX_QUERY_FIELDS} query fields" in api.json()["detail"]
        # Before any route is matched: an unknown address too (the one change from a
        # dependency, which only a matched route ran).
        assert client.get(f"/no-such-page?{fields}").status_code == 422
        assert client.get("/no-such-page?k=1").status_code == 404
        # Static files pass by: their query strings are cache-busters nobody parses.
        assert client.get(f"/static/css/app.css?{fields}").status_code in (200, 404)


def test_an_ended_session_loses_its_user_on_an_api_address_too(client: TestClient) -> None:
    register(client, "ada")
    with statements(client) as seen:
        client.get("/api/calc/memory?params=7e9")  # /api/: the language reads no user
    assert session_lookups(seen) <= 1  # none on SQLite while nothing is committed
    with Session(client.app.state.engine) as session:
        sessions.end_all_sessions(session, 1)
        session.commit()
    with statements(client) as seen:
        client.get("/api/calc/memory?params=7e9")  # looked up, found ended: the cookie forgets
    assert session_lookups(seen) == 1
    with statements(client) as seen:
        client.get("/api/calc/memory?params=7e9")
    assert session_lookups(seen) == 0
