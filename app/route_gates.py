"""Route matching that passes over a whole router when the path rules it out, and that matches
once per request, not twice.

FastAPI 0.163 keeps each included router as one route and, for every request, tries the
routes behind each router in turn, with bookkeeping around every try: some 5 µs a route on
the development machine, so a path behind ~100 routes spent half a millisecond, half of the
home page's time, only finding its route. A router whose routes all start /calculators cannot
answer /quiz/..., so its gate answers "no match" after one set lookup. What matches, and in
which order, is unchanged: a gate says no only where every route behind it would say no.

Nine calculator routers share the first segment /calculators (and /api): a path such as
/calculators/planner/result was tried against every route of each. A router whose routes
have no parameters at all can only match its routes' exact paths, so its gate is a set of
them. And FastAPI matches a request twice, once to choose the router and again, inside it, to
choose the route; the gate keeps the first result for the second.

FastAPI's included router is a private class (fastapi.routing._IncludedRouter); the versions
are pinned, and tests/test_route_gates.py checks that every route still answers its paths.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.routing import APIRoute, _IncludedRouter
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

# Where the gate that chose a request's router leaves its match, for that router's second ask.
_MATCHED = "shardlab.route_match"


def first_segment(path: str) -> str:
    """'/calculators/memory' -> 'calculators'; '/' -> ''."""
    return path.split("/", 2)[1] if path.startswith("/") else ""


def route_segments(router: _IncludedRouter) -> frozenset[str] | None:
    """The first path segments of every route behind `router`, or None when one route's
    first segment is a parameter (it could match anything)."""
    found: set[str] = set()
    for candidate in router.effective_candidates():
        if isinstance(candidate, _IncludedRouter):
            inner = route_segments(candidate)
            if inner is None:
                return None
            found |= inner
            continue
        path = getattr(candidate, "path", None)
        if not isinstance(path, str) or "{" in first_segment(path):
            return None
        found.add(first_segment(path))
    return frozenset(found)


def route_paths(router: _IncludedRouter) -> frozenset[str] | None:
    """Every path behind `router`, or None when a route has a parameter or is not an API
    route (a mount matches a prefix, not a path)."""
    found: set[str] = set()
    for candidate in router.effective_candidates():
        if isinstance(candidate, _IncludedRouter):
            inner = route_paths(candidate)
            if inner is None:
                return None
            found |= inner
            continue
        if not isinstance(candidate.original_route, APIRoute) or "{" in candidate.path:
            return None
        found.add(candidate.path)
    return frozenset(found)


@dataclass
class GatedRouter(_IncludedRouter):
    """An included router that first checks the path: against its routes' exact paths where
    it has them (`paths`), else against their first segments."""

    segments: frozenset[str] = frozenset()
    paths: frozenset[str] | None = None

    def rules_out(self, path: str) -> bool:
        if self.paths is not None:
            return path not in self.paths
        return first_segment(path) not in self.segments

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if self.rules_out(get_route_path(scope)):
            return Match.NONE, {}
        return super().matches(scope)

    def _match(self, scope: Scope) -> tuple[Match, Scope, BaseRoute | None, object]:
        asked = (get_route_path(scope), scope.get("method"))
        kept = scope.get(_MATCHED)
        if kept is not None and kept[0] is self and kept[1] == asked:
            return kept[2]
        found = super()._match(scope)
        scope[_MATCHED] = (self, asked, found)
        return found


def gate_routers(app: FastAPI) -> int:
    """Puts a gate on each included router of `app` whose routes' first segments are all
    fixed (and whose paths are, where they are); call it after the last include_router
    (routes added later are not in the gate). Returns how many routers were gated."""
    routes = app.router.routes
    gated = 0
    for index, route in enumerate(routes):
        if type(route) is not _IncludedRouter:
            continue
        segments = route_segments(route)
        if segments is None:
            continue
        routes[index] = GatedRouter(
            original_router=route.original_router,
            include_context=route.include_context,
            segments=segments,
            paths=route_paths(route),
        )
        gated += 1
    return gated
