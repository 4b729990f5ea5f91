"""The calculators' pages and JSON API. Every module here named `router.py`, `api.py` or
`*_router.py` holds one `router`; `routers()` finds them, so a new calculator adds a module
and the app serves it."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter


def routers() -> list[APIRouter]:
    names = sorted(
        m.name
        for m in pkgutil.iter_modules(__path__)
        if m.name in ("router", "api") or m.name.endswith("_router")
    )
    return [importlib.import_module(f"{__name__}.{name}").router for name in names]
