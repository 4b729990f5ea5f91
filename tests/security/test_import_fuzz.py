"""hypothesis on the progress import file (app/quiz/progress_file.py): never a 5xx, all or
nothing, and nothing imported that breaks a page.

The documents are mostly well formed: each field is drawn valid, and at a rate the case
draws, invalid instead (a naive or odd time, a date far off, a negative, huge or NaN
stability or difficulty, a fractional step, a wrong type, a missing or unknown key), with
unknown item ids, duplicate entries, huge strings and numbers the schema admits; now and
then the bytes themselves are broken. For each file:

- a refused file (422) names what is wrong: when one field was spoilt, its place in the file
  (`attempts.1.created_at`) is in the page; and the learner's progress is exactly as before
  (the export, but for its time, is the same);
- an accepted file leaves /, /progress, /quiz/browse and the export answering 200.

IMPORTS_OVER_HTTP files are uploaded to /progress/import as a browser sends them. The rest,
IMPORTS_DIRECT, go to parse_progress and import_progress on the app's own SQLite database, as
the route calls them, and the pages are asked over HTTP when such a file was taken: an upload
also costs the page it answers with and an export to compare, a refusal by the function
almost nothing, so most cases go that way.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session, delete, select

from app.accounts.models import User
from app.calc.planner import RULES
from app.journey.models import MAX_MINUTES_PER_DAY, MIN_MINUTES_PER_DAY, StudyGoal
from app.main import create_app
from app.quiz.layouts import SCENARIOS
from app.quiz.models import (
    MAX_NEW_PER_DAY,
    MIN_NEW_PER_DAY,
    DesignAttempt,
    ItemState,
    QuizAttempt,
    ReviewSettings,
)
from app.quiz.progress_file import import_progress, parse_progress
from app.ratelimit import SlidingWindow, parse_rate
from tests.utils import make_settings, register

IMPORTS_OVER_HTTP = 300
IMPORTS_DIRECT = 1700
MIN_CASES = 2000
# Past this many answers, or this size of export, the learner's progress is emptied and
# seeded again, so that the export every case makes stays small.
MAX_STORED_ATTEMPTS = 100
MAX_EXPORT_BYTES = 300_000

CASES: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()


@dataclass
class Learner:
    client: TestClient
    user_id: int
    item_ids: list[str]
    seed: bytes  # a valid file, imported first and after each emptying
    export: dict[str, Any] = field(default_factory=dict)  # as of now, but for exported_at


@pytest.fixture(scope="module")
def learner() -> Iterator[Learner]:
    data = Path(tempfile.mkdtemp(prefix="shardlab-import-fuzz-")) / "data"
    app = create_app(make_settings(data))
    with TestClient(app) as client:
        # The import's limit is fixed in the app (app/ratelimit.py): a real limiter, set high.
        app.state.limits["import"] = SlidingWindow(
            app.state.engine, "import", parse_rate("1000000/hour")
        )
        register(client, "ada", "correct horse")
        with Session(app.state.engine) as session:
            user_id = session.exec(select(User.id).where(User.username == "ada")).one()
        item_ids = sorted(item.id for item in app.state.quiz.all())
        seed = json.dumps(_seed_document(item_ids[:3])).encode()
        found = Learner(client, user_id, item_ids, seed)
        _start_over(found)
        yield found


def _seed_document(item_ids: list[str]) -> dict[str, Any]:
    now = datetime.now(UTC)
    due = (now + timedelta(days=2)).isoformat()
    card = {"card_id": 1, "state": 2, "step": None, "stability": 3.5, "difficulty": 5.0,
            "due": due, "last_review": now.isoformat()}  # fmt: skip
    attempt = {"kind": "single", "question_params": {}, "prompt": "Which?", "answer": None,
               "expected": None, "answer_text": "0", "unit": "", "correct": True, "rating": 3,
               "duration_ms": 4000}  # fmt: skip
    return {
        "format": "shardlab-progress",
        "version": 2,
        "exported_at": now.isoformat(),
        "states": [{"item_id": i, "fsrs_card": card, "reviews": 1, "lapses": 0} for i in item_ids],
        "attempts": [
            {**attempt, "item_id": i, "created_at": (now - timedelta(hours=n)).isoformat()}
            for n, i in enumerate(item_ids)
        ],
        "goal": {
            "interview_date": (now + timedelta(days=30)).date().isoformat(),
            "minutes_per_day": 45,
            "updated_at": now.isoformat(),
        },
        "designs": [
            {
                "scenario": 0,
                "layout": {"dp": 8},
                "score": 0.5,
                "verdict": "partial",
                "rules": [],
                "created_at": now.isoformat(),
            }
        ],
        "review_settings": {"new_per_day": 15, "updated_at": now.isoformat()},
    }


def _start_over(learner: Learner) -> None:
    """Empties the learner's progress and imports the seed file again."""
    with Session(learner.client.app.state.engine) as session:
        for table in (QuizAttempt, ItemState, DesignAttempt, StudyGoal, ReviewSettings):
            session.exec(delete(table).where(table.user_id == learner.user_id))
        session.commit()
    response = learner.client.post("/progress/import", files={"file": ("p.json", learner.seed)})
    assert response.status_code == 200, response.text
    learner.export = _exported(learner)


def _exported(learner: Learner) -> dict[str, Any]:
    response = learner.client.get("/progress/export")
    assert response.status_code == 200, response.text[:2000]
    return {k: v for k, v in response.json().items() if k != "exported_at"}


# --- the documents -------------------------------------------------------------------------


class Fields:
    """Draws each field valid or, at the case's rate (in percent), invalid, noting where."""

    def __init__(self, draw: st.DrawFn, rate: int) -> None:
        self.draw, self.rate = draw, rate
        self.spoilt: list[str] = []  # the places given an invalid value, as pydantic names them

    def spoils(self, place: str) -> bool:
        spoil = bool(self.rate) and self.draw(st.integers(0, 99)) < self.rate
        if spoil:
            self.spoilt.append(place)
        return spoil

    def __call__(self, place: str, valid: st.SearchStrategy, invalid: st.SearchStrategy) -> Any:
        return self.draw(invalid if self.spoils(place) else valid)


# Times: aware, with any offset a time zone has and odd ones, from year 1 to 9999 in UTC (one
# an offset takes off the calendar in UTC is refused, and drawn as invalid below).
_FIRST_S = int(datetime.min.replace(tzinfo=UTC).timestamp())
_LAST_S = int(datetime.max.replace(tzinfo=UTC).timestamp())
_NOW_S = int(datetime.now(UTC).timestamp())


def _moment(seconds: int, micro: int, offset_minutes: int) -> str:
    local = timezone(timedelta(minutes=offset_minutes))
    moment = datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=micro)
    return moment.astimezone(local).isoformat()


AWARE = st.one_of(
    st.builds(
        _moment,
        st.one_of(
            st.integers(_NOW_S - 5 * 365 * 86400, _NOW_S + 5 * 365 * 86400),
            st.integers(_FIRST_S + 86400, _LAST_S - 86400),
        ),
        st.integers(0, 999_999),
        st.one_of(st.just(0), st.integers(-(23 * 60 + 59), 23 * 60 + 59)),
    ),
    st.sampled_from([datetime.min.replace(tzinfo=UTC).isoformat(),
                     datetime.max.replace(tzinfo=UTC).isoformat()]),
)  # fmt: skip
NOT_AWARE = st.one_of(
    st.integers(_FIRST_S + 86400, _LAST_S - 86400).map(
        lambda s: datetime.fromtimestamp(s, UTC).replace(tzinfo=None).isoformat()  # naive
    ),
    st.sampled_from(["2026-01-01T00:00:00+24:00", "2026-02-30T00:00:00+00:00", "yesterday", "",
                     "2026-01-01", "2026-01-01T25:00:00Z", "1e400", "0x10",
                     "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.none(),
    st.booleans(),
)  # fmt: skip
WRONG_TYPES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=20),
    st.just([]),
    st.just({}),
)
HUGE_TEXT = st.integers(100, 20_000).map(lambda n: "é" * n)
# Big counts: up to what a SQLite INTEGER holds, and past it.
# Big counts: up to what an Integer column holds on either database (4 bytes on PostgreSQL),
# and past it.
BIG_INTS = st.sampled_from([2**30 + 1, 2**31 - 1])
TOO_BIG = st.sampled_from([2**31, 2**63, 2**64, 10**30])
NUMBERS = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**6), 10**6))


def _longer_than(n: int) -> st.SearchStrategy[str]:
    return st.integers(n + 1, 4 * n).map(lambda size: "x" * size)


def _not_a_count() -> st.SearchStrategy:
    return st.one_of(st.integers(max_value=-1), TOO_BIG, st.sampled_from([1.5, "many", None, [1]]))


def fsrs_card(f: Fields, at: str) -> dict[str, Any]:
    """A card as FSRS writes it; a spoilt field is named by the card, `at`."""
    state = f(at, st.sampled_from([1, 2, 3]), st.sampled_from([0, 4, -1, "2", 2.5]))
    learning, review = state == 1, state == 2
    positive = st.floats(min_value=1e-3, max_value=36500)
    card: dict[str, Any] = {
        "card_id": f(at, st.one_of(st.integers(1, 2**62), BIG_INTS, TOO_BIG), WRONG_TYPES),
        "state": state,
        "step": f(
            at,
            st.none() if review else st.integers(0, 5),
            st.sampled_from([-1, 1.5, "1", 2**70, True] + ([0] if review else [None])),
        ),
        "stability": f(
            at,
            st.one_of(st.none(), positive) if learning else positive,
            st.sampled_from([-1.0, 0.0, float("nan"), float("inf"), 1e308, "3", True]),
        ),
        "difficulty": f(
            at,
            st.one_of(st.none(), st.floats(1, 10)) if learning else st.floats(1, 10),
            st.sampled_from([0.5, 10.5, -3.0, float("nan"), float("-inf"), 1e308, "5"]),
        ),
        "due": f(at, AWARE, NOT_AWARE),
        "last_review": f(at, st.one_of(st.none(), AWARE), NOT_AWARE),
    }
    if f.spoils(at):  # a key left out
        del card[f.draw(st.sampled_from(sorted(card)))]
    return card


def state(f: Fields, at: str, item_ids: list[str]) -> dict[str, Any]:
    return {
        "item_id": f(
            f"{at}.item_id",
            st.one_of(st.sampled_from(item_ids), st.text(min_size=1, max_size=100)),
            st.one_of(st.just(""), HUGE_TEXT, st.integers(), st.none(), st.just(["x"])),
        ),
        # A card's own problem is named by the card: "states.0.fsrs_card: ... stability ...".
        "fsrs_card": (
            f.draw(WRONG_TYPES) if f.spoils(f"{at}.fsrs_card") else fsrs_card(f, f"{at}.fsrs_card")
        ),
        "reviews": f(f"{at}.reviews", st.one_of(st.integers(0, 500), BIG_INTS), _not_a_count()),
        "lapses": f(f"{at}.lapses", st.one_of(st.integers(0, 500), BIG_INTS), _not_a_count()),
    }


def attempt(f: Fields, at: str, item_ids: list[str]) -> dict[str, Any]:
    return {
        "item_id": f(f"{at}.item_id", st.sampled_from(item_ids), st.one_of(st.just(""), HUGE_TEXT)),
        "kind": f(f"{at}.kind", st.sampled_from(["single", "numeric", "generated", "multiple"]),
                  st.one_of(HUGE_TEXT, st.integers())),
        "question_params": f(
            f"{at}.question_params",
            st.dictionaries(st.text(max_size=10), NUMBERS, max_size=4),
            st.one_of(st.lists(st.integers(), max_size=2),
                      st.dictionaries(st.text(max_size=3), st.text(max_size=3), min_size=1)),
        ),
        "prompt": f(f"{at}.prompt", st.one_of(st.text(max_size=60), HUGE_TEXT), WRONG_TYPES),
        "answer": f(f"{at}.answer", st.one_of(st.none(), NUMBERS), st.just("forty-two")),
        "expected": f(f"{at}.expected", st.one_of(st.none(), NUMBERS), st.just([])),
        "answer_text": f(f"{at}.answer_text", st.text(max_size=200), _longer_than(200)),
        "unit": f(f"{at}.unit", st.sampled_from(["", "B", "GB", "s", "%"]), _longer_than(20)),
        "correct": f(f"{at}.correct", st.booleans(), st.sampled_from(["maybe", 2, None])),
        "rating": f(f"{at}.rating", st.one_of(st.none(), st.integers(1, 4)),
                    st.sampled_from([0, 5, -1, 2.5, "3"])),
        "duration_ms": f(f"{at}.duration_ms",
                         st.one_of(st.none(), st.integers(0, 10**7), BIG_INTS), _not_a_count()),
        "created_at": f(f"{at}.created_at", AWARE, NOT_AWARE),
    }  # fmt: skip


def goal(f: Fields) -> dict[str, Any]:
    return {
        "interview_date": f("goal.interview_date", st.dates().map(lambda d: d.isoformat()),
                            st.sampled_from(["2026-02-30", "soon", 20260101, None])),
        "minutes_per_day": f("goal.minutes_per_day",
                             st.integers(MIN_MINUTES_PER_DAY, MAX_MINUTES_PER_DAY),
                             st.sampled_from([MIN_MINUTES_PER_DAY - 1, MAX_MINUTES_PER_DAY + 1,
                                              2**70, -5, 30.5, "45"])),
        "updated_at": f("goal.updated_at", AWARE, NOT_AWARE),
    }  # fmt: skip


LAYOUT_VALUES = {
    "dp": st.integers(1, 4096),
    "tp": st.integers(1, 4096),
    "pp": st.integers(1, 4096),
    "cp": st.integers(1, 4096),
    "ep": st.integers(1, 4096),
    "zero": st.sampled_from(["0", "1", "2", "3", "dist-opt"]),
    "recompute": st.sampled_from(["none", "selective", "full"]),
    "micro_batch": st.integers(1, 4096),
    "schedule": st.sampled_from(["1f1b", "interleaved", "zb-h1", "gpipe"]),
    "virtual_stages": st.integers(1, 64),
}


def design(f: Fields, at: str) -> dict[str, Any]:
    chosen = f.draw(st.lists(st.sampled_from(sorted(set(LAYOUT_VALUES) - {"dp"})), unique=True))
    layout = {key: f.draw(LAYOUT_VALUES[key]) for key in ["dp", *chosen]}
    return {
        "scenario": f(f"{at}.scenario", st.integers(0, len(SCENARIOS) - 1),
                      st.sampled_from([-1, len(SCENARIOS), 2**70, "0"])),
        # An invalid layout is named by its design: "designs.0: ... layout.dp ...".
        "layout": f(f"{at}", st.just(layout),
                    st.one_of(st.just({}), st.just({**layout, "dp": 0}),
                              st.just({**layout, "zero": "4"}), st.just({**layout, "tp": 2**70}))),
        "score": f(f"{at}.score", st.floats(0, 1),
                   st.sampled_from([-0.1, 1.5, float("nan"), float("inf"), "1"])),
        "verdict": f(f"{at}.verdict", st.sampled_from(["full", "partial", "breaks_rule",
                                                         "does_not_fit"]), st.just("great")),
        "rules": f(f"{at}.rules", st.lists(st.sampled_from(sorted(RULES)), max_size=3),
                   st.just(["no_such_rule"])),
        "created_at": f(f"{at}.created_at", AWARE, NOT_AWARE),
    }  # fmt: skip


def review_settings(f: Fields) -> dict[str, Any]:
    return {
        "new_per_day": f("review_settings.new_per_day",
                         st.integers(MIN_NEW_PER_DAY, MAX_NEW_PER_DAY),
                         st.sampled_from([-1, MAX_NEW_PER_DAY + 1, 2**70, 1.5, "ten"])),
        "updated_at": f("review_settings.updated_at", AWARE, NOT_AWARE),
    }  # fmt: skip


@dataclass(frozen=True)
class ImportFile:
    body: bytes
    document: Any  # what was encoded (None when the bytes were broken afterwards)
    spoilt: tuple[str, ...]  # the places given an invalid value


def _listed(f: Fields, make: Callable[[str], dict[str, Any]], at: str, most: int) -> list[Any]:
    entries = [make(f"{at}.{n}") for n in range(f.draw(st.integers(0, most)))]
    if entries and f.draw(st.integers(0, 9)) == 0:  # an entry twice: it is taken once
        entries.append(entries[f.draw(st.integers(0, len(entries) - 1))])
    return entries


# How often (in percent) a field is spoilt: a third of the files over HTTP are whole, to be
# taken and the pages asked; the import function gets more refusals, which cost it little.
HTTP_RATES = (0, 0, 1, 3, 10, 30)
DIRECT_RATES = (0, 1, 3, 10, 30, 30)


@st.composite
def import_files(draw: st.DrawFn, item_ids: list[str], rates: tuple[int, ...]) -> ImportFile:
    f = Fields(draw, draw(st.sampled_from(rates)))
    document: dict[str, Any] = {
        "format": f("format", st.just("shardlab-progress"),
                    st.sampled_from(["shardlab-progres", "", None, 1])),
        "version": f("version", st.sampled_from([1, 2]), st.sampled_from([0, 3, "2", 2.5, None])),
        "exported_at": f("exported_at", AWARE, NOT_AWARE),
        "states": _listed(f, lambda at: state(f, at, item_ids), "states", 3),
        "attempts": _listed(f, lambda at: attempt(f, at, item_ids), "attempts", 3),
        "goal": goal(f) if draw(st.booleans()) else None,
        "designs": _listed(f, lambda at: design(f, at), "designs", 2),
        "review_settings": review_settings(f) if draw(st.booleans()) else None,
    }  # fmt: skip
    # A key left out (those of later versions may be), and a key the format does not have.
    if draw(st.integers(0, 4)) == 0:
        key = draw(st.sampled_from(sorted(document)))
        if key in ("goal", "designs", "review_settings") or f.spoils(key):
            del document[key]
    if f.spoils("surprise"):
        document["surprise"] = 1
    body = json.dumps(document, allow_nan=True).encode()
    broken = draw(st.integers(0, 49))
    if broken == 0:  # cut short
        return ImportFile(body[: draw(st.integers(0, len(body) - 1))], None, ("the file",))
    if broken == 1:  # not UTF-8, or JSON that is not an object
        junk = draw(st.sampled_from([b"\xff\xfe" + body, b"[]", b"null", b'"x"', b"[" * 5000]))
        return ImportFile(junk, None, ("the file",))
    return ImportFile(body, document, tuple(f.spoilt))


# --- the checks ----------------------------------------------------------------------------

_PROBLEM = re.compile(r"<li>(.*?)</li>", re.S)


def _problems(page: str) -> list[str]:
    errors = page.split('<div class="errors" role="alert">', 1)
    assert len(errors) == 2, "a refused import without its list of problems"
    return [unescape(p) for p in _PROBLEM.findall(errors[1].split("</div>", 1)[0])]


def check_refusal_names_the_problem(problems: list[str], case: ImportFile) -> None:
    assert problems, "a refused import that says nothing"
    if case.document is None:
        return
    # Each problem is "where: what", where a place in the file.
    for problem in problems:
        assert ": " in problem, problem
    if len(case.spoilt) == 1:
        where = case.spoilt[0]
        assert any(p.startswith(where) for p in problems), (where, problems)


def check_pages(learner: Learner) -> None:
    """The pages that read the progress answer (the export is asked for next)."""
    for page in ("/", "/progress", "/quiz/browse"):
        response = learner.client.get(page)
        assert response.status_code == 200, (page, response.text[:2000])


def _after_taken(learner: Learner) -> None:
    """The pages answer; the export is kept as the progress to compare with."""
    check_pages(learner)
    learner.export = _exported(learner)
    too_big = len(json.dumps(learner.export)) > MAX_EXPORT_BYTES
    if too_big or len(learner.export["attempts"]) > MAX_STORED_ATTEMPTS:
        _start_over(learner)


@settings(
    max_examples=IMPORTS_OVER_HTTP,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_an_uploaded_file_is_taken_whole_or_refused_clearly(learner: Learner, data: Any) -> None:
    case = data.draw(import_files(learner.item_ids, HTTP_RATES))
    CASES["http"] += 1
    response = learner.client.post("/progress/import", files={"file": ("p.json", case.body)})
    assert response.status_code < 500, (case, response.text[:3000])
    if response.status_code == 422:
        OUTCOMES["refused"] += 1
        check_refusal_names_the_problem(_problems(response.text), case)
        assert _exported(learner) == learner.export, "a refused import changed the progress"
        return
    assert response.status_code == 200, response.text[:2000]
    OUTCOMES["taken"] += 1
    _after_taken(learner)


@settings(
    max_examples=IMPORTS_DIRECT,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_the_import_function_takes_a_file_whole_or_refuses_it(learner: Learner, data: Any) -> None:
    case = data.draw(import_files(learner.item_ids, DIRECT_RATES))
    CASES["direct"] += 1
    parsed, problems = parse_progress(case.body)
    if parsed is None:
        OUTCOMES["refused"] += 1
        check_refusal_names_the_problem(problems, case)
        return
    with Session(learner.client.app.state.engine) as session:
        try:
            import_progress(session, learner.user_id, parsed)
        except Exception:
            session.rollback()
            assert _exported(learner) == learner.export, "a failed import left part behind"
            raise
    OUTCOMES["taken"] += 1
    _after_taken(learner)


def test_the_fuzz_ran_enough_cases(request: pytest.FixtureRequest) -> None:
    """Counts what the tests above ran, so the claim of MIN_CASES is checked."""
    here = [item for item in request.session.items if item.module is request.module]
    if len(here) < 3:
        pytest.skip("counts only when every test of this module runs")
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\nImport fuzz: {CASES.total()} files ({dict(CASES)}), {dict(OUTCOMES)}")
    assert CASES.total() >= MIN_CASES
    assert OUTCOMES["taken"] >= MIN_CASES // 10 and OUTCOMES["refused"] >= MIN_CASES // 10
