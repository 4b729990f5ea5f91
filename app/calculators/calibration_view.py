"""Calibrating the planner's performance profile to a person's own measured runs, bounded so
that no request can hold the server, and the fit as the planner page shows it.

Every number comes from app.calc.calibration; this module bounds the work, picks and formats.
The bounds, timed on one core of the development machine with 8B-model runs: a fit of 4 runs
took 1.1 s and of 32 runs 2.5 s (50 runs up to about 16 s, as the least-squares fit takes more
steps); leave-one-out refits the profile once per run, so it grows as the square: 4 runs 1.1 s,
8 runs 4.3 s, 10 runs 7.2 s, 12 runs 14 s, 20 runs 34 s. Hence at most MAX_RUNS runs per fit,
leave-one-out only up to MAX_CROSS_VALIDATED_RUNS, and at most FITS_AT_ONCE fits at a time
(the others are told to try again), on top of the per-address rate limit (app.ratelimit).
"""

from __future__ import annotations

import csv
import io
import json
import threading
from dataclasses import asdict, dataclass

from app.calc.calibration import MEMORY_FREE, Calibration, MeasuredRun, fit, load_runs
from app.calc.messages import Message, words_of
from app.calc.performance import PARAMETERS, PerformanceProfile
from app.calc.profiles import DEFAULT, built_in
from app.calc.published_runs import PROFILE_TITLES
from app.calculators.communication_view import seconds
from app.formatting import memory
from app.i18n import N_

MAX_RUNS = 50
MAX_TEXT_BYTES = 200_000
MIN_CROSS_VALIDATED_RUNS = 3  # app.calc.calibration.fit leaves one out from three runs
MAX_CROSS_VALIDATED_RUNS = 10
FITS_AT_ONCE = 2
PROFILE_NAME = "calibrated"
MAX_SOURCE_CHARS = 200  # the run names in the profile's source, which travels in the address
MAX_MESSAGE_CHARS = 600

# An example runs file: four runs of Llama 3 8B on one and two nodes of H100s. The step times
# and peak memory are made up (near what the planner predicted when this was written), to show
# the format, not measured.
EXAMPLE_CSV = """\
name,model,gpu,nodes,seq_len,global_batch_sequences,dp,tp,pp,zero_stage,micro_batch,step_s,peak_memory_gb
8b-1node-dp8,llama3-8b,h100-sxm,1,4096,256,8,1,1,1,1,12.9,74.1
8b-1node-dp4-tp2,llama3-8b,h100-sxm,1,4096,256,4,2,1,1,2,14.6,57.0
8b-2nodes-dp16,llama3-8b,h100-sxm,2,4096,256,16,1,1,1,1,7.3,68.2
8b-2nodes-dp4-tp2-pp2,llama3-8b,h100-sxm,2,4096,256,4,2,2,1,1,8.1,27.9
"""  # noqa: E501 (a CSV row)

# Held by each fit while it runs; a fit that finds none free is refused (CalibratorBusy).
running_fits = threading.BoundedSemaphore(FITS_AT_ONCE)


class CalibratorBusy(Exception):
    """FITS_AT_ONCE fits are running: this one is refused rather than queued."""

    message = N_("Other calibrations are running just now: try again in a few seconds.")


def runs_kind(filename: str | None) -> str | None:
    """A runs file's kind from its name, "csv" or "json"; None: guessed from its text."""
    suffix = (filename or "").rsplit(".", 1)[-1].lower()
    return suffix if suffix in ("csv", "json") else None


def decode_runs(raw: bytes) -> str:
    """A runs file's bytes as text: at most MAX_TEXT_BYTES of UTF-8 (a spreadsheet's
    byte-order mark dropped)."""
    if len(raw) > MAX_TEXT_BYTES:
        raise ValueError(_too_large())
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(
            Message(N_("the runs file is not UTF-8 text: save it as UTF-8 CSV or JSON"))
        ) from None


def _too_large() -> Message:
    template = N_("the runs file is over %(kb)s kB: give at most %(most)s runs")
    return Message(template, kb=MAX_TEXT_BYTES // 1000, most=MAX_RUNS)


def _row_count(text: str, kind: str | None) -> int:
    """How many runs the text holds, counted before any is read; 0 where it does not parse
    (load_runs then says what is wrong)."""
    stripped = text.lstrip()
    if (kind or ("json" if stripped[:1] in ("[", "{") else "csv")) == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return 0
        rows = data.get("runs") if isinstance(data, dict) else data
        return len(rows) if isinstance(rows, list) else 0
    try:
        return sum(1 for _ in csv.DictReader(io.StringIO(text)))
    except csv.Error:
        return 0


def parse_runs(text: str, kind: str | None = None) -> list[MeasuredRun]:
    """The runs of a runs file's text (app.calc.calibration.load_runs), within the bounds;
    ValueError says what is wrong, naming the run and the field."""
    if len(text.encode()) > MAX_TEXT_BYTES:
        raise ValueError(_too_large())
    count = _row_count(text, kind)
    if count > MAX_RUNS:
        template = N_("at most %(most)s runs can be calibrated at once, got %(count)s")
        raise ValueError(Message(template, most=MAX_RUNS, count=count))
    try:
        return load_runs(text, kind)
    except ValueError as error:
        raise ValueError(_bounded(words_of(error))) from None


def _bounded(message: str) -> str:
    """A message that repeats what a file holds (a run's name) cut to MAX_MESSAGE_CHARS."""
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 1] + "…"


def cross_validates(runs: int) -> bool:
    return MIN_CROSS_VALIDATED_RUNS <= runs <= MAX_CROSS_VALIDATED_RUNS


def _source(runs: list[MeasuredRun]) -> str:
    names = ", ".join(run.name for run in runs)
    if len(names) > MAX_SOURCE_CHARS:
        names = names[: MAX_SOURCE_CHARS - 1] + "…"
    return f"fitted to {len(runs)} measured runs: {names}"


def calibrate(runs: list[MeasuredRun], cross_validate: bool = True) -> Calibration:
    """The profile fitted to `runs` and its report, leaving one out when cross_validates;
    CalibratorBusy when FITS_AT_ONCE fits are running already."""
    if not running_fits.acquire(blocking=False):
        raise CalibratorBusy
    try:
        return fit(
            runs,
            cross_validate=cross_validate and cross_validates(len(runs)),
            name=PROFILE_NAME,
            source=_source(runs),
        )
    finally:
        running_fits.release()


def profile_json(profile: PerformanceProfile) -> str:
    """The profile as one line of JSON, for the planner's `profile` input in an address."""
    return json.dumps(asdict(profile), separators=(",", ":"))


@dataclass(frozen=True)
class ParameterRow:
    name: str
    value: str  # with its unit
    meaning: str  # marked with N_() in app.calc.performance
    fitted: bool  # moved by this fit; else its starting value


def _with_unit(value: float, unit: str) -> str:
    if value == 0:
        return "0" if unit == "fraction" else f"0 {unit}"
    if unit == "s":
        return seconds(value)
    if unit == "B":
        return memory(value) if value >= 1e6 else f"{value:.3g} B"
    return f"{value:.3g}"


def parameter_rows(calibration: Calibration) -> list[ParameterRow]:
    """Every named parameter of the fitted profile, in app.calc.performance's order."""
    moved = set(calibration.report.free)
    if any(r.measured_memory_bytes is not None for r in calibration.report.residuals):
        moved |= set(MEMORY_FREE)
    return [
        ParameterRow(name, _with_unit(value, PARAMETERS[name].unit), PARAMETERS[name].meaning,
                     name in moved)
        for name, value in calibration.profile.values().items()
    ]  # fmt: skip


def profile_choices() -> list[tuple[str, str, str]]:
    """The built-in profiles as the planner's select lists them: (value, name, title), the
    default first with the empty value (a query that names no profile gets it)."""
    names = sorted(built_in(), key=lambda name: name != DEFAULT)
    return [("" if name == DEFAULT else name, name, profile_title(name)) for name in names]


def profile_title(name: str) -> str:
    """A built-in profile's title (marked in app/calculators/labels.py), or its name."""
    return PROFILE_TITLES.get(name, name)


def short_title(title: str) -> str:
    """The title before its bracketed list of runs, for the select."""
    return title.split(" (", 1)[0]
