"""Calculators behind generated questions: inputs in, the answer and its worked solution out.

One module per calculator family; each defines `GENERATORS`, a mapping from the name a quiz
item's `generator:` field uses to a function of the drawn inputs. This package merges them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping

from app.quiz.generators.solution import Solution

Generator = Callable[[Mapping[str, float]], Solution]


def _discover() -> dict[str, Generator]:
    found: dict[str, Generator] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if info.name in {"solution", "words"}:  # helpers, not a calculator family
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, generator in module.GENERATORS.items():
            if name in found:
                raise ValueError(f"generator {name!r} is defined twice")
            found[name] = generator
    return found


GENERATORS: dict[str, Generator] = _discover()

__all__ = ["GENERATORS", "Generator", "Solution"]
