"""What each demo accepts, with the bounds that keep one job inside the worker's budget.

Torch-free on purpose: the web app validates a request with these models before it ever
reaches the worker, and the worker validates again with the same models.

One module per demo, named like the demo (`demos/specs/<demo>.py` for `demos/<demo>.py`),
each defining `PARAMS`, its pydantic model, and `COLLECTIVES`, the kinds its tensors travel by
(demos/specs/devices.py says which a backend runs on which device), and `MIN_RANKS` where a
demo needs more than one rank. The worker's demo table is built from this one.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from pydantic import BaseModel


def _discover() -> dict[str, ModuleType]:
    """Every module here that defines PARAMS: a demo's spec (devices.py is the table of what
    each backend runs, not a demo)."""
    modules = (
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
    )
    return {module.__name__.rsplit(".", 1)[1]: module for module in modules
            if hasattr(module, "PARAMS")}  # fmt: skip


_SPECS = _discover()
DEMO_PARAMS: dict[str, type[BaseModel]] = {name: spec.PARAMS for name, spec in _SPECS.items()}
DEMO_COLLECTIVES: dict[str, tuple[str, ...]] = {
    name: spec.COLLECTIVES for name, spec in _SPECS.items()
}
DEMO_MIN_RANKS: dict[str, int] = {
    name: getattr(spec, "MIN_RANKS", 1) for name, spec in _SPECS.items()
}
