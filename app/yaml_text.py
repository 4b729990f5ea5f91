"""YAML read the way content is read everywhere: safe (plain data, no Python objects), by
libyaml's C parser where PyYAML was built with it (its wheels are). The pure-Python parser
took some 3 s of the app's 4 s start on 2 cores, reading the question bank."""

from __future__ import annotations

from typing import Any

import yaml

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """yaml.safe_load(text), as fast as this PyYAML allows."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
