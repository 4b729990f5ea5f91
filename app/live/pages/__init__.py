"""Every demo page: one module per demo, each defining `PAGE` (an app.live.demo_page.DemoPage)."""

from __future__ import annotations

import importlib
import pkgutil

from app.live.demo_page import DemoPage


def _discover() -> dict[str, DemoPage]:
    pages: dict[str, DemoPage] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        page = importlib.import_module(f"{__name__}.{info.name}").PAGE
        pages[page.slug] = page
    return pages


DEMO_PAGES: dict[str, DemoPage] = _discover()
