"""Built-in performance profiles (app.calc.performance), each fitted by app.calc.calibration to
published runs (app.calc.planner.published) and stored here as JSON with the runs it was fitted
to. `python -m bench.planner_accuracy --write` fits them again from the runs; the tests check
that the stored files are what the fit gives.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from app.calc.performance import PerformanceProfile, load_profile

FOLDER = Path(__file__).parent
DEFAULT = "published"  # the profile a request gets when it names none


@cache
def built_in() -> dict[str, PerformanceProfile]:
    """Every stored profile by its file's stem."""
    return {path.stem: load_profile(path.read_text()) for path in sorted(FOLDER.glob("*.json"))}


def default_profile() -> PerformanceProfile:
    """The profile fitted to every dense published run, or the physical defaults before one
    was fitted."""
    return built_in().get(DEFAULT, PerformanceProfile())
