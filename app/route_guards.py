"""What a request passes before its route runs: a query string of a bounded number of fields,
a cookie whose session has ended losing its user, and, for a state-changing method only, this
session's CSRF token.

These were three app-wide FastAPI dependencies. FastAPI solves each dependency of each
request with its own bookkeeping, whether or not it has anything to do: about a fifth of a
kept card page's time went to three checks that pass every GET (bench/request_cost.py: 0.53
-> 0.41 ms a request). Now:

- the query bound and the ended-session check run in one pure-ASGI layer inside the
  router, so they meet every request to a route, and a refusal still goes through the app's
  exception handlers (its page or its JSON) as one raised in a route does;
- the CSRF check stays a dependency, because it reads the parsed form the route reads after
  it (Starlette keeps the parsed form on the Request FastAPI makes, not in the scope), but
  only on a route with a POST, PUT, PATCH or DELETE: GuardedRoute puts it there, and
  guard_routes refuses to start an app with a state-changing route made without it.

The one change: the layer runs before a path is matched, so an unknown address with more than
MAX_QUERY_FIELDS query fields is answered 422, not 404.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.params import Depends as DependsParam
from fastapi.routing import APIRoute, _IncludedRouter
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from app.request_shape import MAX_QUERY_FIELDS, too_many_query_fields
from app.security import CrossOriginProtection, checked_user, require_csrf_token


def _changes_state(methods: Sequence[str] | set[str] | None) -> bool:
    return any(m.upper() not in CrossOriginProtection.SAFE_METHODS for m in methods or ("GET",))


class GuardedRoute(APIRoute):
    """An APIRoute that takes the session's CSRF token when a method of it changes state
    (require_csrf_token, first among its dependencies). Every router's route_class."""

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Any],
        *,
        methods: set[str] | list[str] | None = None,
        dependencies: Sequence[DependsParam] | None = None,
        **kwargs: Any,
    ) -> None:
        if _changes_state(methods):
            dependencies = [Depends(require_csrf_token), *(dependencies or [])]
        super().__init__(path, endpoint, methods=methods, dependencies=dependencies, **kwargs)


def _api_routes(routes: Sequence[BaseRoute]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, _IncludedRouter):
            yield from _api_routes(route.original_router.routes)
        elif isinstance(route, APIRoute):
            yield route


def unguarded_routes(app: FastAPI) -> list[str]:
    """'METHODS path' of each state-changing route of `app` that does not check the token."""
    return [
        f"{','.join(sorted(route.methods))} {route.path}"
        for route in _api_routes(app.router.routes)
        if _changes_state(route.methods)
        and not any(d.call is require_csrf_token for d in route.dependant.dependencies)
    ]


class RequestGuard:
    """Pure ASGI, inside the router: the query bound and the session check for every request
    but a static file's (which reads neither)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/static/"):
            raw = scope.get("query_string", b"")
            if raw and raw.count(b"&") + 1 > MAX_QUERY_FIELDS:
                raise too_many_query_fields()
            # The page header, the language, card visits and demo runs read the user id from
            # the cookie without asking optional_user: they must not act for a session that
            # ended. LanguageMiddleware has usually asked already; then this reads nothing.
            await checked_user(Request(scope))
        await self.app(scope, receive, send)


def guard_routes(app: FastAPI) -> None:
    """Puts RequestGuard inside `app`'s router and checks that every state-changing route
    takes the CSRF token; call it after the last route is added."""
    if missing := unguarded_routes(app):
        raise RuntimeError(
            "state-changing routes without the CSRF check (make their router with "
            f"route_class=GuardedRoute): {', '.join(missing)}"
        )
    # Starlette's Router calls its middleware_stack, and the app's ExceptionMiddleware calls
    # the router: what the guard raises reaches the app's exception handlers.
    app.router.middleware_stack = RequestGuard(app.router.middleware_stack)
