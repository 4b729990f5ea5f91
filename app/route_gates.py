"""Route matching that passes over a whole router when the path's first segment rules it out.

FastAPI 0.163 keeps each included router as one route and, for every request, tries the
routes behind each router in turn, with bookkeeping around every try: some 5 µs a route on
the development machine, so a path behind ~100 routes spent half a millisecond, half of the
home page's time, only finding its route. A router whose routes all start /calculators cannot
answer /quiz/..., so its gate answers "no match" after one set lookup. What matches, and in
which order, is unchanged: a gate says no only where every route behind it would say no.

FastAPI's included router is a private class (fastapi.routing._IncludedRouter); the versions
are pinned, and tests/test_route_gates.py checks that every route still answers its paths.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.routing import _IncludedRouter
from starlette._utils import get_route_path
from starlette.routing import Match
from starlette.types import Scope


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


@dataclass
class GatedRouter(_IncludedRouter):
    """An included router that first checks the path's first segment."""

    segments: frozenset[str] = frozenset()

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if first_segment(get_route_path(scope)) not in self.segments:
            return Match.NONE, {}
        return super().matches(scope)


def gate_routers(app: FastAPI) -> int:
    """Puts a gate on each included router of `app` whose routes' first segments are all
    fixed; call it after the last include_router (routes added later are not in the gate).
    Returns how many routers were gated."""
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
        )
        gated += 1
    return gated
