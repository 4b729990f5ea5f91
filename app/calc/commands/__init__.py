"""The calculators' subcommands. Each module here is one `python -m app.calc NAME` and
provides `add_parser(commands) -> parser` and `run(parser, args) -> exit code`; modules are
found by name, so a new calculator adds a module and nothing else."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def command_modules() -> list[ModuleType]:
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "options")
    return [importlib.import_module(f"{__name__}.{name}") for name in names]
