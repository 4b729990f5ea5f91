"""hypothesis on every state-changing HTML form: never a 5xx.

The routes are found by walking the app (every POST/PUT/PATCH/DELETE route outside /api/ and
the OpenAPI schema), so a new form is fuzzed without being listed here. Each case is sent by a
signed-in learner (an admin for /admin/; now and then an anonymous visitor) with the session's
CSRF token, to the route's path with its parameters drawn from real ids and junk. The form is
either one the app's own pages hold (read from them, so a case can get past the first check)
with fields changed, dropped or added, or one made up of field names from the route's own
fields (its Form parameters, the model it parses, the fields its code reads) and every
`name="..."` in the templates. Values: text with control and bidi characters, long text,
huge and negative numbers, NaN and infinities, booleans, dates, nothing. A redirect is
followed once, so a value stored that breaks the page it leads to is caught too.
"""

from __future__ import annotations

import inspect
import re
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx import Cookies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from sqlmodel import Session, select

from app.accounts.models import User
from app.config import ROOT_DIR
from app.main import create_app
from app.quiz.items import GeneratedItem
from app.ratelimit import SlidingWindow, parse_rate
from tests.utils import api_routes, log_in, make_settings, refresh_csrf, register

PASSWORD = "correct horse battery"
PEOPLE = ("learner", "root", "anonymous")  # root is the admin
STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}

# Found by the walk today. The walk must find these (a broken walk would fuzz nothing), and
# a form it finds that is not here must be added, so the count below stays what it claims.
KNOWN_FORMS = {
    "/login", "/register", "/logout",
    "/account/language", "/account/password", "/account/sessions/others/end",
    "/account/sessions/{session_id}/end",
    "/cards/{card_id}/check", "/calculators/planner/calibrate",
    "/quiz/answer", "/quiz/undo", "/practice/answer",
    "/quiz/browse/{item_id}/suspend", "/quiz/browse/{item_id}/note",
    "/quiz/compare",
    "/mock", "/mock/design", "/mock/design/rounds/{round_id}", "/mock/{mock_id}/answer",
    "/mock/{mock_id}/skip",
    "/mock/{mock_id}/end",
    "/progress/settings", "/progress/import", "/plan",
    "/groups", "/groups/join", "/groups/{group_id}/sharing", "/groups/{group_id}/leave",
    "/admin/users/{user_id}/disabled", "/admin/users/{user_id}/sessions/end",
    "/admin/invites", "/admin/invites/{invite_id}/revoke", "/admin/queue/{entry_id}/cancel",
}  # fmt: skip

# Cases per route. An argon2 hash costs about a tenth of a second of CPU: the routes that hash
# (log-in, register, a password change) and those that end the session, after which the
# learner logs in again, get fewer.
DEFAULT_CASES = 160
CASES_OF = {
    "/login": 40,
    "/register": 40,
    "/logout": 30,
    "/account/password": 40,
    "/account/sessions/{session_id}/end": 60,
    "/admin/users/{user_id}/sessions/end": 60,
    "/admin/users/{user_id}/disabled": 80,
    # A runs file that parses is a profile fit: about a second.
    "/calculators/planner/calibrate": 40,
}
MIN_CASES = 4000
# After these the learner or the admin may be signed out, disabled or have a new password and
# session, or the visitor be signed in.
MAY_SIGN_OUT = {
    "/login", "/register", "/logout", "/account/password", "/account/sessions/{session_id}/end",
    "/admin/users/{user_id}/disabled", "/admin/users/{user_id}/sessions/end",
}  # fmt: skip

# The pages whose forms are read as starting points, as whom (the mock's id is filled in).
PAGES = {
    "learner": ["/", "/quiz", "/quiz?mode=practice", "/mock", "/mock/design", "/mock/{mock}",
                "/mock/design/rounds/llama3-8b-h100-pretrain",
                "/progress", "/plan", "/groups", "/groups/{group}", "/account", "/quiz/browse",
                "/calculators/planner"],
    "root": ["/admin"],
    "anonymous": ["/login", "/register", "/practice?topic={card}"],
}  # fmt: skip

CASES: Counter[str] = Counter()
STATUSES: dict[str, Counter[int]] = {}


def form_routes(app: FastAPI) -> dict[str, APIRoute]:
    documented = set(app.openapi()["paths"])
    return {
        route.path: route
        for route in api_routes(app.routes)
        if route.methods & STATE_CHANGING
        and not route.path.startswith("/api/")
        and route.path not in documented
    }


def _form_params(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.body_params}
    for sub in dependant.dependencies:
        names |= _form_params(sub)
    return names


_READ_FIELD = re.compile(r"""(?:form\.get|getlist)\(\s*["'](\w+)["']""")
_PARSED_MODEL = re.compile(r"parse_form\(\s*(\w+)")


def _modules_behind(module: ModuleType) -> set[ModuleType]:
    """The module and the app's modules whose functions or classes it uses."""
    found = {module}
    for value in vars(module).values():
        if inspect.isfunction(value) or inspect.isclass(value):
            owner = inspect.getmodule(value)
            if owner is not None and owner.__name__.startswith("app."):
                found.add(owner)
    return found


def own_fields(route: APIRoute) -> set[str]:
    """The fields the route itself reads: its Form parameters, the fields of the model it
    parses the form into, and the names its code (and the code it calls) reads."""
    names = _form_params(route.dependant)
    module = sys.modules[route.endpoint.__module__]
    for name in _PARSED_MODEL.findall(inspect.getsource(module)):
        model = getattr(module, name, None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            names |= set(model.model_fields)
    for used in _modules_behind(module):
        names |= set(_READ_FIELD.findall(inspect.getsource(used)))
    return names


def template_fields() -> set[str]:
    names = set()
    for page in (ROOT_DIR / "templates").rglob("*.html"):
        names |= set(re.findall(r'name="([\w-]+)"', page.read_text()))
    return names


@dataclass
class PageForm:
    action: str  # path and query, as the page has it
    fields: list[tuple[str, str]] = field(default_factory=list)


class _FormReader(HTMLParser):
    """The forms of a page that post (method="post" or hx-post), with the values a browser
    would send untouched; a button's formaction makes a form of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[PageForm] = []
        self._open: PageForm | None = None
        self._also_to: list[str] = []  # the open form's buttons' formactions
        self._textarea: str | None = None  # the name of the <textarea> being read
        self._select: str | None = None  # the name of the <select> being read
        self._picked: bool = False  # whether that <select> has its value yet

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            action = a.get("hx-post") or (a.get("action") if a.get("method") == "post" else None)
            self._open, self._also_to = (PageForm(action) if action else None), []
        elif self._open is None:
            return
        elif tag == "button" and a.get("formaction"):
            self._also_to.append(a["formaction"])
        elif tag == "button" and "name" in a:  # the button clicked sends its value
            self._open.fields.append((a["name"], a.get("value", "")))
        elif tag == "input" and "name" in a and a.get("type") != "submit":
            self._open.fields.append((a["name"], a.get("value", "")))
        elif tag == "textarea" and "name" in a:
            self._textarea = a["name"]
            self._open.fields.append((a["name"], ""))
        elif tag == "select" and "name" in a:
            self._select, self._picked = a["name"], False
        elif tag == "option" and self._select is not None:
            # The first option, or the one marked selected, as a browser sends it.
            if not self._picked or "selected" in a:
                if self._picked:
                    self._open.fields.pop()
                self._open.fields.append((self._select, a.get("value", "")))
                self._picked = True

    def handle_data(self, data: str) -> None:
        if self._open is not None and self._textarea is not None:
            name, value = self._open.fields[-1]
            self._open.fields[-1] = (name, value + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None
        elif tag == "form" and self._open is not None:
            self.forms.append(self._open)
            self.forms += [PageForm(to, list(self._open.fields)) for to in self._also_to]
            self._open = None


def page_forms(html: str) -> list[PageForm]:
    reader = _FormReader()
    reader.feed(html)
    return reader.forms


@contextmanager
def worker_that_hangs_up() -> Iterator[str]:
    """An address whose listener closes every connection at once: the admin page finds the
    demo worker unavailable without waiting out its 2 s probe of an address nobody answers."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        server.close()


@dataclass
class World:
    """The app, one client whose cookies say who it is (one client: the app's lifespan runs
    once), the forms its pages hold, and the real ids and values the strategies draw."""

    app: FastAPI
    client: TestClient
    jars: dict[str, Cookies]  # the learner's, the admin's and an anonymous visitor's cookies
    tokens: dict[str, str]  # and their sessions' CSRF tokens
    routes: dict[str, APIRoute]
    forms: dict[str, list[PageForm]]  # by route
    all_fields: list[str]
    real_text: list[str]
    real_ids: list[int]
    password_hash: str = ""  # PASSWORD's, as registering stored it


def _use(world: World, who: str) -> TestClient:
    world.client.cookies = world.jars[who]
    world.client.headers["X-CSRF-Token"] = world.tokens[who]
    return world.client


def _keep(world: World, who: str) -> None:
    world.jars[who] = Cookies(world.client.cookies)
    world.tokens[who] = world.client.headers["X-CSRF-Token"]


def _route_of(routes: dict[str, APIRoute], path: str) -> str | None:
    for template in routes:
        if re.fullmatch(re.sub(r"\{\w+\}", r"[^/]+", template), path):
            return template
    return None


def _read_forms(world: World) -> None:
    """Reads the forms of PAGES, and of the pages that answering a question leads to."""
    forms = world.forms
    card_ids = [card.meta.id for card in world.app.state.cards.all()]
    pages = [(who, page) for who, paths in PAGES.items() for page in paths]
    pages += [("learner", f"/cards/{card_id}") for card_id in card_ids]
    for who, page in pages:
        client = _use(world, who)
        html = client.get(page.format(mock=1, group=1, card=card_ids[0])).text
        for form in page_forms(html):
            template = _route_of(world.routes, urlsplit(form.action).path)
            if template is not None:
                forms.setdefault(template, []).append(form)
    # The calibration form with the runs of the app's own example file pasted in.
    example = _use(world, "learner").get("/calculators/planner/calibration-example.csv").text
    for form in list(forms.get("/calculators/planner/calibrate", [])):
        pasted = [(key, example if key == "runs_text" else value) for key, value in form.fields]
        forms["/calculators/planner/calibrate"].append(PageForm(form.action, pasted))
    # Each form also with its empty fields filled in, as a learner would send it ("1" is a
    # valid answer to a question that asks for a number, for one).
    for found in forms.values():
        found += [
            PageForm(f.action, [(key, value or "1") for key, value in f.fields])
            for f in list(found)
            if any(value == "" for _, value in f.fields)
        ]
    # An answer's page holds the undo form: answers are sent, as filled in.
    filled = [f for f in forms.get("/quiz/answer", []) if all(v for _, v in f.fields)]
    for form in filled[:3]:
        html = _use(world, "learner").post(form.action, data=_as_data(form.fields)).text
        for found in page_forms(html):
            if _route_of(world.routes, urlsplit(found.action).path) == "/quiz/undo":
                forms.setdefault("/quiz/undo", []).append(found)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    data = Path(tempfile.mkdtemp(prefix="shardlab-every-form-")) / "data"
    with worker_that_hangs_up() as worker_address:
        # Limits high enough that the fuzzing is not throttled (they have their own tests).
        app = create_app(
            make_settings(
                data,
                worker_address=worker_address,
                login_rate_limit="1000000/minute",
                register_rate_limit="1000000/hour",
                calibrate_rate_limit="1000000/minute",
            )
        )
        with TestClient(app) as client:
            yield _make_world(app, client)


def _make_world(app: FastAPI, client: TestClient) -> World:
    # The import's limit is fixed in the app (app/ratelimit.py): a real limiter, set high.
    app.state.limits["import"] = SlidingWindow(
        app.state.engine, "import", parse_rate("1000000/hour")
    )
    bank, cards = app.state.quiz, app.state.cards
    routes = form_routes(app)
    fields = template_fields()
    fields |= {f"in_{n}" for i in bank.all() if isinstance(i, GeneratedItem) for n in i.choices}
    for route in routes.values():
        fields |= own_fields(route)
    world = World(
        app=app, client=client, jars={}, tokens={}, routes=routes, forms={},
        all_fields=sorted(fields),
        real_text=sorted({*(i.id for i in bank.all()), *(c.meta.id for c in cards.all()),
                          "review", "practice", "learner", "root", PASSWORD}),
        real_ids=[1, 2, 3, 4, 5],
    )  # fmt: skip
    for who in PEOPLE:
        client.cookies = Cookies()
        if who == "anonymous":
            refresh_csrf(client)
        else:
            register(client, who, PASSWORD)
            # Something for the ids to find: a group each and a mock interview; and a second
            # session, which the account page offers to end.
            client.post("/groups", data={"name": "study group"})
            client.post("/mock", data={"questions": "3", "minutes": "5"})
            client.cookies = Cookies()
            log_in(client, who, PASSWORD)
        _keep(world, who)
    with Session(app.state.engine) as session:
        root = session.exec(select(User).where(User.username == "root")).one()
        root.is_admin = True
        session.add(root)
        session.commit()
        world.password_hash = root.password_hash
    _use(world, "root").post("/admin/invites", data={"days": "7", "uses": "2"})
    _read_forms(world)
    return world


# C0 and C1 controls, zero-width and byte-order marks, and the bidi marks and overrides.
CONTROL_AND_BIDI = (
    "\x00\x01\x07\x08\t\n\r\x0b\x0c\x1b\x7f\x85"
    "\u061c\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff\ufffd"
)
ODD_TEXT = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(CONTROL_AND_BIDI)),
    max_size=40,
)
# Long, and now and then past the 64 KiB a form may send (a 413 is a fine answer too).
LONG_TEXT = st.builds(
    lambda piece, n: (piece * n)[:n],
    st.sampled_from(["a", "1", "é", "\u202e", "\x00", "€𝄞", "<script>"]),
    st.integers(1_000, 20_000),
)
NUMBERS = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**18, 10**19, 10**300]),
).map(str)
FLOATS = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "-0",
                     "0.0", "1.5", "0x10", "1_000", "١٢", " 3 ", "3,5"]),
    st.floats().map(str),
)  # fmt: skip
BOOLEANS = st.sampled_from(["true", "false", "on", "off", "yes", "no", "1", "0", "True"])
DATES = st.one_of(
    st.integers(-800, 800).map(lambda d: (date.today() + timedelta(days=d)).isoformat()),
    st.dates().map(date.isoformat),
    st.sampled_from(["2026-02-30", "0000-01-01", "9999-12-31", "+10000-01-01", "today"]),
)
NOW_MS = st.integers(-100_000_000, 100_000_000).map(
    lambda d: str(int(datetime.now(UTC).timestamp() * 1000) + d)
)


def values(world: World) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(world.real_text),
        ODD_TEXT,
        LONG_TEXT,
        NUMBERS,
        FLOATS,
        BOOLEANS,
        DATES,
        NOW_MS,
        st.sampled_from([str(i) for i in world.real_ids]),
        st.just(""),
    )


def path_values(world: World) -> st.SearchStrategy[str]:
    junk = ["0", "-1", str(2**63), str(2**64), "9" * 40, "abc", "1.5", " 1", "١", "..", "%00",
            "\u202e", "x" * 300, "1e3", "true"]  # fmt: skip
    return st.one_of(
        st.sampled_from([str(i) for i in world.real_ids]),
        st.sampled_from(world.real_text),
        st.sampled_from(junk),
        ODD_TEXT.filter(bool),
    )


@dataclass(frozen=True)
class FormCase:
    path: str
    query: str
    fields: list[tuple[str, str]]
    upload: tuple[str, bytes] | None
    htmx: bool
    anonymous: bool


@st.composite
def form_cases(draw: st.DrawFn, world: World, template: str) -> FormCase:
    own = sorted(own_fields(world.routes[template]))
    name = st.one_of(
        *([st.sampled_from(own)] * 3 if own else []),
        st.sampled_from(world.all_fields),
        st.text(max_size=12),
    )
    value = values(world)
    params = re.findall(r"\{(\w+)\}", template)
    chosen = {p: draw(path_values(world)) for p in params}
    path = re.sub(r"\{(\w+)\}", lambda m: quote(chosen[m[1]], safe=""), template)
    query = draw(st.sampled_from(["", "", "lang=zh", "lang=xx"]))
    fields: list[tuple[str, str]] = []
    held = world.forms.get(template, [])
    if held and draw(st.booleans()):
        # A form a page holds: its path (or the one drawn), each field kept, changed or left
        # out, and a few more added.
        form = draw(st.sampled_from(held))
        if draw(st.booleans()):
            action = urlsplit(form.action)
            path, query = action.path, action.query
        changed = draw(st.lists(st.integers(0, max(len(form.fields) - 1, 0)), max_size=3))
        for at, (key, kept) in enumerate(form.fields):
            change = draw(st.sampled_from(["replace", "edit", "drop"])) if at in changed else ""
            if change == "replace":
                fields.append((key, draw(value)))
            elif change == "edit":  # one piece of it (a CSV cell, a query's value) replaced
                pieces = re.split(r"([,\n&=/ ])", kept)
                pieces[draw(st.integers(0, len(pieces) - 1))] = draw(value)
                fields.append((key, "".join(pieces)))
            elif change != "drop":
                fields.append((key, kept))
    fields += draw(st.lists(st.tuples(name, value), max_size=8 - min(len(fields), 6)))
    upload = draw(
        st.one_of(
            st.none(),
            st.none(),
            st.tuples(st.sampled_from([*own, "file", "runs_file"]), st.binary(max_size=300)),
        )
    )
    return FormCase(
        path=path,
        query=query,
        fields=fields,
        upload=upload,
        htmx=draw(st.booleans()),
        anonymous=draw(st.sampled_from([False] * 7 + [True])),
    )


def _as_data(fields: list[tuple[str, str]]) -> dict[str, list[str]]:
    data: dict[str, list[str]] = {}
    for key, value in fields:
        data.setdefault(key, []).append(value)
    return data


def _who(path: str, anonymous: bool) -> str:
    if anonymous or path in ("/login", "/register"):
        return "anonymous"
    return "root" if path.startswith("/admin/") else "learner"


def _send(world: World, case: FormCase) -> list[tuple[str, int, str]]:
    """Posts the case as its person, then follows a redirect within the site once; every
    (what, status, start of the body)."""
    who = _who(case.path, case.anonymous)
    client = _use(world, who)
    data = _as_data(case.fields)
    data["csrf_token"] = [world.tokens[who]]
    headers = {"HX-Request": "true"} if case.htmx else {}
    files = None
    if case.upload is not None:
        name, content = case.upload
        files = {name: ("upload.json", content, "application/octet-stream")}
    response = client.post(
        case.path,
        params=parse_qsl(case.query),
        data=data,
        files=files,
        headers=headers,
        follow_redirects=False,
    )
    seen = [(f"POST {case.path}", response.status_code, response.text[:500])]
    location = response.headers.get("location", "")
    if response.status_code in (302, 303) and location.startswith("/"):
        followed = client.get(location, follow_redirects=False)
        seen.append((f"GET {location}", followed.status_code, followed.text[:500]))
    _keep(world, who)
    return seen


def _restore(world: World, template: str, who: str) -> None:
    """Puts the people a case may have changed back as the next case expects them: enabled,
    with their password, signed in with their session's token, and the visitor a new
    anonymous one. Only the admin acts on others (/admin/users/...)."""
    if template not in MAY_SIGN_OUT:
        return
    with Session(world.app.state.engine) as session:
        for user in session.exec(select(User).where(User.username.in_(PEOPLE))).all():
            user.disabled, user.password_hash = False, world.password_hash
            session.add(user)
        session.commit()
    changed = {"learner", "root"} if template.startswith("/admin/users/") else {who}
    for person in sorted(changed):
        client = _use(world, person)
        page = client.get("/account", follow_redirects=False)
        if person == "anonymous" or page.status_code != 200:
            client.cookies = Cookies()
            if person == "anonymous":
                refresh_csrf(client)
            else:
                log_in(client, person, PASSWORD)
        else:  # still signed in, perhaps in a new session with a new token
            client.headers["X-CSRF-Token"] = re.search(_TOKEN, page.text)[1]
        _keep(world, person)


_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def test_the_walk_finds_every_form(world: World) -> None:
    assert set(world.routes) == KNOWN_FORMS, set(world.routes) ^ KNOWN_FORMS


def test_the_pages_forms_are_read(world: World) -> None:
    """Most routes start from a real form: a route without one is fuzzed from names alone."""
    assert len(world.forms) >= 25, sorted(KNOWN_FORMS - set(world.forms))
    assert any(
        dict(f.fields).get("item_id") and "section" in dict(f.fields)
        for f in world.forms["/cards/{card_id}/check"]
    )


@pytest.mark.parametrize("template", sorted(KNOWN_FORMS))
def test_no_form_answers_with_a_server_error(world: World, template: str) -> None:
    started = time.perf_counter()

    @settings(
        max_examples=CASES_OF.get(template, DEFAULT_CASES),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=form_cases(world, template))
    def fuzz(case: FormCase) -> None:
        CASES[template] += 1
        try:
            for what, status, body in _send(world, case):
                assert status < 500, (what, case, body)
                STATUSES.setdefault(template, Counter())[status] += 1
        finally:
            _restore(world, template, _who(case.path, case.anonymous))

    fuzz()
    answers = dict(sorted(STATUSES[template].items()))
    took_s = time.perf_counter() - started
    print(f"{template}: {CASES[template]} cases in {took_s:.1f} s, answers {answers}")


def test_the_fuzz_ran_enough_cases(request: pytest.FixtureRequest) -> None:
    """Counts what the test above ran, so the claim of MIN_CASES is checked."""
    here = [item for item in request.session.items if item.module is request.module]
    if len(here) < len(KNOWN_FORMS) + 3:
        pytest.skip("counts only when every form of this module is fuzzed")
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\nForm fuzz: {CASES.total()} cases over {len(CASES)} routes")
    assert set(CASES) == KNOWN_FORMS
    assert CASES.total() >= MIN_CASES
