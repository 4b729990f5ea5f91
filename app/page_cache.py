"""Parts of pages rendered once and kept: what depends only on the content, the language and
the page's own inputs (a card's text, a calculator's form and result), never on who asks.

A page is its template rendered in two parts. The `main` block, the costly part, is rendered
as a visitor sees it (no user, CSRF_HOLE for the CSRF token) and kept under a key that names
everything it depends on; the page around it (the header with the user's name and token, the
bar back to a step) is rendered afresh on every request around the kept block
(templates/_kept_main.html), and the token put in last. A kept block is the same for everyone,
and the page each user gets is the one the template alone would give them. An htmx fragment
with no page around it is kept whole, the same way.

Keys hold the content they were rendered from (the app's CardLibrary and QuestionBank), so
content loaded anew, by a new app, never meets a block rendered from the old one.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool

from app.language import request_language
from app.security import SESSION_USER_KEY, csrf_token, user_checked_now
from app.templating import templates

Value = TypeVar("Value")

# Stands for the CSRF token in kept HTML: letters and digits only, so escaping leaves it as it
# is, and random per process, so no card or input can spell it.
CSRF_HOLE = f"csrf{secrets.token_hex(16)}"
KEPT_MAIN_TEMPLATE = "_kept_main.html"


class LruCache(Generic[Value]):
    """At most `max_entries` values and `max_size` of their sizes (`size_of`), the least
    recently used dropped first. Safe across the thread pool's threads; two threads that miss
    the same key at once both make it, and one value stays."""

    def __init__(self, max_entries: int, max_size: int,
                 size_of: Callable[[Value], int] = lambda _value: 1) -> None:  # fmt: skip
        self.max_entries, self.max_size, self._size_of = max_entries, max_size, size_of
        self._values: OrderedDict[Hashable, tuple[Value, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get_or_make(self, key: Hashable, make: Callable[[], Value]) -> Value:
        with self._lock:
            found = self._values.get(key)
            if found is not None:
                self._values.move_to_end(key)
                self.hits += 1
                return found[0]
            self.misses += 1
        value = make()  # outside the lock: a slow render holds up no other key
        self._keep(key, value, replace=False)
        return value

    def put(self, key: Hashable, value: Value) -> None:
        """Keeps `value` under `key`, in place of what was kept there."""
        self._keep(key, value, replace=True)

    def _keep(self, key: Hashable, value: Value, replace: bool) -> None:
        size = self._size_of(value)
        if size > self.max_size:
            return  # larger than the whole cache: served, not kept
        with self._lock:
            if replace and key in self._values:
                self._size -= self._values.pop(key)[1]
            if key not in self._values:
                self._values[key] = (value, size)
                self._size += size
            while len(self._values) > self.max_entries or self._size > self.max_size:
                _key, (_value, dropped) = self._values.popitem(last=False)
                self._size -= dropped

    def get(self, key: Hashable) -> Value | None:
        """The value kept under `key`, or None; a hit counts, a miss does not (get_or_make,
        which makes the value, counts it)."""
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return None
            self._values.move_to_end(key)
            self.hits += 1
            return found[0]

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._size = 0
            self.hits = self.misses = 0


@dataclass(frozen=True)
class KeptHtml:
    """A main block or a fragment as a visitor sees it, and the status and headers it is
    answered with (a calculator answers 422 for bad inputs, HX-Replace-Url for good ones).

    Kept as UTF-8 bytes cut where the CSRF token goes: a request joins the pieces around its
    own token instead of searching and encoding the whole page (41 KB for a card) again."""

    pieces: tuple[bytes, ...]
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls, html: str, status: int = 200, headers: tuple[tuple[str, str], ...] = ()
    ) -> KeptHtml:
        return cls(tuple(piece.encode() for piece in html.split(CSRF_HOLE)), status, headers)

    @property
    def html(self) -> str:
        return CSRF_HOLE.join(piece.decode() for piece in self.pieces)

    @property
    def takes_token(self) -> bool:
        return len(self.pieces) > 1

    @property
    def size(self) -> int:
        return sum(map(len, self.pieces))


# Card pages, the map and such are bounded by the content; calculators by the LRU. A block is
# 5-130 KB, so the bound that matters is on bytes: some 24 MB.
KEPT: LruCache[KeptHtml] = LruCache(4096, 24_000_000, lambda kept: kept.size)

# Whole pages around those blocks, one per header they are shown with (signed out, or each
# user's name; each path and query the language switch repeats): the page is rendered once
# per learner and link, then only its CSRF token changes.
PAGES: LruCache[KeptHtml] = LruCache(8192, 64_000_000, lambda kept: kept.size)

# A learner's own pages (the dashboard), whole, each until the moment its numbers change of
# themselves (a review falling due, midnight): one per learner, version of their progress,
# language and link. A learner's next write changes the version, so the page kept under the
# old one is never asked for again and leaves as the least recently used.
OWN_PAGES: LruCache[tuple[KeptHtml, datetime]] = LruCache(
    4096, 64_000_000, lambda kept: kept[0].size
)

# What a route gives when a part is not kept yet: the template's context, the status, and
# headers for the response.
Values = Callable[[], tuple[Mapping[str, object], int, Mapping[str, str]]]


def _page_context(request: Request) -> dict[str, object]:
    """What every template gets besides its own values (app/templating.py's processors), made
    once per request: a page not kept whole is looked for on the event loop, then made in the
    thread pool, and both need it. What is noted on the request leaves the request out: the
    request's state holding the request would be a cycle, a whole request's objects left to
    the collector instead of freed as the response goes (a full collection every few seconds
    under load, 30-90 ms each, was most of the p99)."""
    found = getattr(request.state, "kept_page_context", None)
    if found is None:
        found = {}
        for processor in templates.context_processors:
            found.update(processor(request))
        request.state.kept_page_context = found
    return {"request": request, **found}


def _as_visitor(request: Request, template: str, values: Values, main_only: bool) -> KeptHtml:
    """The template's main block (`main_only`) or the whole template, rendered with no user
    and CSRF_HOLE for the token: nothing of the requester's can be in what is kept."""
    context, status, headers = values()
    kept: list[str] = []

    def keep(html: Markup) -> Markup:
        kept.append(str(html))
        return html

    everything = {**_page_context(request), **context, "user": None, "csrf_token": CSRF_HOLE}
    if main_only:
        everything.update(kept_page_template=template, kept_main_html=None, keep_main=keep)
        templates.get_template(KEPT_MAIN_TEMPLATE).render(everything)
        html = kept[0]
    else:
        html = templates.get_template(template).render(everything)
    return KeptHtml.of(html, status, tuple(headers.items()))


def _page_key(
    request: Request, template: str, key: Hashable, context: Mapping[str, object]
) -> tuple[Hashable, ...]:
    user = context["user"]
    # All the header reads of the user; a name changed or a role taken away is a new key.
    viewer = None if user is None else (user.id, user.username, user.is_admin)
    return _place(request, template, key, viewer)


def _place(
    request: Request, template: str, key: Hashable, viewer: Hashable
) -> tuple[Hashable, ...]:
    """Where a whole page is kept: the template, the language, what it reads (`key`), the
    path and query its links repeat, and who it is shown to."""
    lang = request_language(request)
    return (template, lang, key, request.url.path, request.url.query, viewer)


def kept_page(
    request: Request,
    template: str,
    key: Hashable,
    values: Values,
    around: Mapping[str, object] | None = None,
) -> HTMLResponse:
    """`template` as TemplateResponse renders it, its main block kept under `key` (with the
    template's name and the language), and the whole page kept too, for each header it can
    have: signed out or which user's name, the path and query its links repeat.

    `values()` gives the template's context, asked only when the block is not kept yet, so
    everything the block shows must follow from `key` and the language. `around`: what the
    template's other blocks (title, head, scripts) read, given on every request; it too must
    follow from `key`."""
    lang = request_language(request)
    context = _page_context(request)
    token = str(context["csrf_token"])

    def whole_page() -> KeptHtml:
        main = KEPT.get_or_make(
            (template, lang, key), lambda: _as_visitor(request, template, values, main_only=True)
        )
        page = {**context, **(around or {})}
        page.update(
            kept_page_template=template, kept_main_html=Markup(main.html), csrf_token=CSRF_HOLE
        )
        html = templates.get_template(KEPT_MAIN_TEMPLATE).render(page)
        return KeptHtml.of(html, main.status, main.headers)

    kept = PAGES.get_or_make(_page_key(request, template, key, context), whole_page)
    return _answer(kept, token)


def _answer(kept: KeptHtml, token: str) -> HTMLResponse:
    return HTMLResponse(
        token.encode().join(kept.pieces), status_code=kept.status, headers=dict(kept.headers)
    )


def _reads_nothing(request: Request) -> bool:
    """Whether the page context can be made without the database: a visitor, or a learner
    whose header the session check has read already (app/security.py)."""
    if not isinstance(request.session.get(SESSION_USER_KEY), int):
        return True
    return user_checked_now(request) is not None


def kept_page_at_once(request: Request, template: str, key: Hashable) -> HTMLResponse | None:
    """The page kept_page would answer, if it is kept whole and asking for it reads nothing
    from the database; else None. Cheap enough for the event loop: a route answers a kept
    page there and sends only a miss to the thread pool."""
    if not _reads_nothing(request):
        return None
    context = _page_context(request)
    kept = PAGES.get(_page_key(request, template, key, context))
    return None if kept is None else _answer(kept, str(context["csrf_token"]))


async def kept_or_made(
    request: Request,
    template: str,
    key: Hashable,
    make: Callable[..., HTMLResponse],
    *args: object,
    at_once: bool = True,
    around: Callable[[Request], AbstractAsyncContextManager[None]] | None = None,
) -> HTMLResponse:
    """For an async route: the page kept whole under `template` and `key` answered on the
    event loop (kept_page_at_once), else `make(request, *args)` in the thread pool, where it
    may read and write the database and calls kept_page. `at_once=False`: the route has
    something to write first (a learner's first visit), so only the thread pool will do.
    `around(request)`: held while the thread pool makes the page (a heavy-work slot)."""
    if at_once and (kept := kept_page_at_once(request, template, key)) is not None:
        return kept
    async with around(request) if around else nullcontext():
        return await run_in_threadpool(make, request, *args)


async def kept_page_async(
    request: Request,
    template: str,
    key: Hashable,
    values: Values,
    around: Mapping[str, object] | None = None,
) -> HTMLResponse:
    """kept_page for an async route: the page kept whole is answered on the event loop,
    anything still to render goes to the thread pool (kept_or_made)."""
    return await kept_or_made(request, template, key, kept_page, template, key, values, around)


def kept_fragment_at_once(request: Request, template: str, key: Hashable) -> HTMLResponse | None:
    """kept_fragment's answer if the fragment is kept, else None (as kept_page_at_once)."""
    kept = KEPT.get((template, request_language(request), key))
    if kept is None:
        return None
    token = csrf_token(request) if kept.takes_token else ""
    return _answer(kept, token)


def kept_fragment(request: Request, template: str, key: Hashable, values: Values) -> HTMLResponse:
    """An htmx fragment (a template that extends nothing), kept whole under `key` (with the
    template's name and the language), as kept_page keeps a main block."""
    lang = request_language(request)
    kept = KEPT.get_or_make(
        (template, lang, key), lambda: _as_visitor(request, template, values, main_only=False)
    )
    token = csrf_token(request) if kept.takes_token else ""
    return _answer(kept, token)


def _own_key(request: Request, template: str, key: Hashable) -> tuple[Hashable, ...] | None:
    """Where a learner's own page is kept: the learner as the session check read them this
    request (their name and role, which the header shows, and their progress_version, which
    the database moves on every write to their progress: app/accounts/models.py), the
    language, the link; None for a visitor or a session not checked."""
    user = user_checked_now(request)
    if user is None:
        return None
    # The app's run names the database too: user ids and versions repeat across databases,
    # and tests run many apps, one database each, in one process.
    viewer = (request.app.state.run, user.id, user.username, user.is_admin, user.progress_version)
    return _place(request, template, key, viewer)


def own_page_at_once(request: Request, template: str, key: Hashable) -> HTMLResponse | None:
    """The learner's own page as kept_own_page kept it, if its progress has not changed since
    and its time has not run out; else None. Reads nothing: for the event loop."""
    where = _own_key(request, template, key)
    found = OWN_PAGES.get(where) if where is not None else None
    if found is None or datetime.now(UTC) >= found[1]:
        return None
    return _answer(found[0], csrf_token(request))


def kept_own_page(
    request: Request,
    template: str,
    key: Hashable,
    context: Mapping[str, object],
    until: datetime,
) -> HTMLResponse:
    """`template` rendered for the signed-in learner with `context`, which the route read
    after the session check (so from progress no older than the version that check read), and
    kept until `until`, when the page would show other numbers with nothing written. `key`
    names what else the page depends on (the content)."""
    page = {**_page_context(request), **context, "csrf_token": CSRF_HOLE}
    kept = KeptHtml.of(templates.get_template(template).render(page))
    where = _own_key(request, template, key)
    if where is not None:
        OWN_PAGES.put(where, (kept, until))
    return _answer(kept, csrf_token(request))
