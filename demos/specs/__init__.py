"""What each demo accepts, with the bounds that keep one job inside the worker's budget.

Torch-free on purpose: the web app validates a request with these models before it ever
reaches the worker, and the worker validates again with the same models.

One module per demo, named like the demo (`demos/specs/<demo>.py` for `demos/<demo>.py`),
each defining `PARAMS`, its pydantic model. The worker's demo table is built from this one.
"""

from __future__ import annotations

import importlib
import pkgutil

from pydantic import BaseModel


def _discover() -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if info.name.startswith("_"):
            continue
        found[info.name] = importlib.import_module(f"{__name__}.{info.name}").PARAMS
    return found


DEMO_PARAMS: dict[str, type[BaseModel]] = _discover()
