"""Passwords, the signed session, the current user, CSRF defence and security headers."""

from __future__ import annotations

import base64
import secrets
from functools import cache
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, HTTPException, Request, status
from pwdlib import PasswordHash
from sqlalchemy import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.accounts import sessions
from app.accounts.models import User
from app.accounts.sessions import UserSession
from app.calc.messages import N_
from app.db import SessionDep
from app.ratelimit import client_address

password_hash = PasswordHash.recommended()  # argon2id

SESSION_USER_KEY = "user_id"
# The random token naming this session's row in usersession (app/accounts/sessions.py).
SESSION_TOKEN_KEY = "session_token"
SESSION_CSRF_KEY = "csrf"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
# Pure computations that read no session and change nothing take no token, so scripts can
# call them; the cross-origin check still applies to them.
CSRF_EXEMPT_PREFIXES = ("/api/calc/",)


def hash_password(password: str) -> str:
    return password_hash.hash(password)


def verify_password(password: str, hashed: str) -> bool:
    return password_hash.verify(password, hashed)


@cache
def unknown_user_hash() -> str:
    """A hash no password matches, verified when a log-in names no user, so that an unknown
    username costs the same argon2 work as a known one: a fast answer would tell an attacker
    which usernames exist."""
    return hash_password(secrets.token_urlsafe(32))


def log_in(request: Request, session: Session, user: User) -> None:
    # A fresh session at login, so a session fixed before login is worth nothing after:
    # that includes a new CSRF token (the next page carries it).
    assert user.id is not None
    request.session.clear()
    token = sessions.start_session(
        session, user.id, request.headers.get("user-agent", ""), client_address(request)
    )
    request.session[SESSION_USER_KEY] = user.id
    request.session[SESSION_TOKEN_KEY] = token
    _session_secret(request)


def log_out(request: Request, session: Session) -> None:
    token = request.session.get(SESSION_TOKEN_KEY)
    if isinstance(token, str):
        # Ended on the server too: a copy of this cookie signs no one in after this.
        sessions.end_session_by_token(session, token)
    request.session.clear()


def _live_session(request: Request, session: Session) -> tuple[User, UserSession] | None:
    user_id = request.session.get(SESSION_USER_KEY)
    token = request.session.get(SESSION_TOKEN_KEY)
    if not isinstance(user_id, int) or not isinstance(token, str):
        return None
    return sessions.live_session(session, user_id, token)


def _forget_user(request: Request) -> None:
    """Drops the user from a cookie whose session has ended. Its CSRF token stays: a form left
    open in that browser then posts and is sent to log in, rather than refused with a 403."""
    request.session.pop(SESSION_USER_KEY, None)
    request.session.pop(SESSION_TOKEN_KEY, None)


def optional_user(request: Request, session: SessionDep) -> User | None:
    """The signed-in user, if the cookie names a session that is live on the server: logged
    out, ended by a password change or reset, by the admin, or by disabling the user, it is
    not, whatever the cookie's signature and age say."""
    checked = getattr(request.state, _CHECKED, None)
    if checked is not None and checked[0].id == request.session.get(SESSION_USER_KEY):
        # Read a moment ago by checked_user, this request: the rows are the route's own
        # session's, as a lookup here would have made them, without a second lookup.
        found = (session.merge(checked[0], load=False), session.merge(checked[1], load=False))
    else:
        found = _live_session(request, session)
    if found is None:
        _forget_user(request)
        return None
    user, record = found
    sessions.touch_session(session, record)
    # For CurrentSessionId: the account page marks this session, a password change keeps it.
    request.state.user_session_id = record.id
    return user


# Set on request.state by checked_user: the live session's (user, row), or None where the
# cookie's session has ended; not set at all before the check (or for a visitor, who has none).
_CHECKED = "checked_session"


async def checked_user(request: Request) -> User | None:
    """The cookie's user if its session is live, read once per request (one lookup); a
    cookie whose session has ended loses its user. LanguageMiddleware asks first, for the
    user's language, and RequestGuard's ask (app/route_guards.py) then reads nothing.

    On SQLite the lookup runs on the event loop: one read by a unique index of a local file
    in WAL mode, which a writer never blocks, costs less than a hop to the thread pool (a
    third of a signed-in card page's time under load, docs/benchmarks.md). PostgreSQL's is a
    network round trip: the thread pool, outside a transaction (app/main.py
    engine_autocommit), one round trip where BEGIN and ROLLBACK around it made three."""
    if not isinstance(request.session.get(SESSION_USER_KEY), int):
        return None  # anonymous: nothing to check, and no thread or database needed
    state = request.state
    if hasattr(state, _CHECKED):
        found = getattr(state, _CHECKED)
        return found[0] if found is not None else None

    def check(engine: Engine) -> tuple[User, UserSession] | None:
        # A session of its own, closed at once: a long demo stream must not hold a read open.
        with Session(engine) as session:
            return _live_session(request, session)

    app = request.app.state
    if app.engine.dialect.name == "sqlite":
        # Through connections of its own (app/db.py engine_beside): waiting for one of the
        # shared pool's, which the thread pool's requests hold, would stop the whole loop.
        found = _checked_on_sqlite(request, app.engine_beside)
    else:
        found = await run_in_threadpool(check, app.engine_autocommit)
    if found is None:
        _forget_user(request)
    # The page header shows this user's name (app/templating.py), the language is the user's
    # own setting (app/language.py), and optional_user takes the rows: no second read.
    setattr(state, _CHECKED, found)
    return found[0] if found is not None else None


# What the session check found, on one SQLite connection, while the file is unchanged.
_KEPT_CHECKS = "shardlab.session_checks"
MAX_KEPT_CHECKS = 10_000


def _checked_on_sqlite(request: Request, engine: Engine) -> tuple[User, UserSession] | None:
    """The session check on SQLite, answered again without the lookup while nothing has been
    committed to the file: `PRAGMA data_version`, a counter of this connection's (kept here:
    two connections' counters differ), moves on every commit by any other connection, in any
    process; a session ended, a user disabled, progress written are each a commit."""
    key = (request.session.get(SESSION_USER_KEY), request.session.get(SESSION_TOKEN_KEY))
    # The driver's own connection, past SQLAlchemy's statement machinery: a PRAGMA and a
    # dict look-up are the whole cost of a kept answer.
    raw = engine.raw_connection()
    try:
        version = raw.driver_connection.execute("PRAGMA data_version").fetchone()[0]
        kept = raw.info.setdefault(_KEPT_CHECKS, {})
    finally:
        raw.close()
    found = kept.get(key)
    if found is not None and found[0] == version:
        return found[1]
    # Read after the counter: a commit in between moves it, and the next request reads anew.
    with Session(engine) as session:
        live = _live_session(request, session)
    if len(kept) >= MAX_KEPT_CHECKS:
        kept.clear()
    kept[key] = (version, live)
    return live


def user_checked_now(request: Request) -> User | None:
    """The cookie's user as checked_user found it this request, if it is still the cookie's
    user (a route that signs someone in or out changes that); else None, reading nothing."""
    found = getattr(request.state, _CHECKED, None)
    user_id = request.session.get(SESSION_USER_KEY) if "session" in request.scope else None
    return found[0] if found is not None and found[0].id == user_id else None


def request_user(request: Request) -> User | None:
    """The cookie's user, for what a page shows of it (the header's name, the language): the
    one checked_user found, or, for a request it never saw (an error answered by a middleware
    before any route), read by id, a disabled user being no one."""
    user_id = request.session.get(SESSION_USER_KEY) if "session" in request.scope else None
    if not isinstance(user_id, int):
        return None
    if (user := user_checked_now(request)) is not None:
        return user
    with Session(request.app.state.engine) as session:
        user = session.get(User, user_id)
    return user if user is not None and not user.disabled else None


def _session_secret(request: Request) -> str:
    """This session's CSRF secret, made on first use; it lives in the signed session cookie."""
    secret = request.session.get(SESSION_CSRF_KEY)
    if not isinstance(secret, str):
        secret = secrets.token_urlsafe(32)
        request.session[SESSION_CSRF_KEY] = secret
    return secret


def csrf_token(request: Request) -> str:
    """The session's CSRF secret under a fresh random mask, for one page.

    Pages are compressed (starlette-compress), and a compressed page that holds a fixed secret
    beside text an attacker can put in it (a search query) leaks the secret by its length
    (BREACH). Masked anew on every page, the token a page carries never repeats, while
    require_csrf_token unmasks it back to the one secret (Django's scheme).
    """
    secret = _session_secret(request).encode()
    mask = secrets.token_bytes(len(secret))
    masked = mask + bytes(m ^ s for m, s in zip(mask, secret, strict=True))
    return base64.urlsafe_b64encode(masked).decode()


def _unmask(token: str) -> bytes | None:
    """The secret inside a token csrf_token made; None for anything else."""
    try:
        raw = base64.urlsafe_b64decode(token.encode())
    except (ValueError, UnicodeEncodeError):
        return None
    if len(raw) % 2 or not raw:
        return None
    half = len(raw) // 2
    return bytes(m ^ x for m, x in zip(raw[:half], raw[half:], strict=True))


class CsrfRefused(Exception):
    """A state-changing request without this session's token; the app answers 403."""

    message = N_(
        "This form has expired or did not come from this site (its security token is missing "
        "or wrong). Reload the page and try again."
    )


async def require_csrf_token(request: Request) -> None:
    """The first dependency of every POST/PUT/PATCH/DELETE route (app/route_guards.py): the
    request carries the session's token, in the X-CSRF-Token header (htmx, from
    hx-headers:inherited on <body>) or a csrf_token field."""
    if request.method in CrossOriginProtection.SAFE_METHODS or request.url.path.startswith(
        CSRF_EXEMPT_PREFIXES
    ):
        return
    expected = request.session.get(SESSION_CSRF_KEY)
    sent = [request.headers.get(CSRF_HEADER)]
    if request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        # Starlette caches the parsed form, so the route reads the same one.
        sent.append((await request.form()).get(CSRF_FIELD))
    if not isinstance(expected, str) or not any(
        isinstance(token, str)
        and (unmasked := _unmask(token)) is not None
        and secrets.compare_digest(unmasked, expected.encode())
        for token in sent
    ):
        raise CsrfRefused


class LoginRequired(Exception):
    """Raised for a page that needs a user; the app turns it into a redirect to /login."""

    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


async def current_user(request: Request, user: OptionalUser) -> User:
    if user is None:
        # The query too: /quiz?mode=practice&topic=... must come back as that step's questions.
        query = request.url.query
        raise LoginRequired(request.url.path + (f"?{query}" if query else ""))
    return user


async def current_api_user(user: OptionalUser) -> User:
    if user is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "log in first")
    return user


OptionalUser = Annotated[User | None, Depends(optional_user)]
CurrentUser = Annotated[User, Depends(current_user)]


async def current_session_id(request: Request, user: CurrentUser) -> int:
    """The id of the signed-in request's own session row (optional_user noted it)."""
    return request.state.user_session_id


CurrentSessionId = Annotated[int, Depends(current_session_id)]


def admin_user(user: CurrentUser) -> User:
    if not user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, N_("admins only"))
    return user


AdminUser = Annotated[User, Depends(admin_user)]


class CrossOriginProtection:
    """Refuses state-changing requests that a browser says came from another site.

    Sec-Fetch-Site first, Origin as the fallback, as in Go 1.25's CrossOriginProtection
    (https://words.filippo.io/csrf/). Pure ASGI, so it never buffers an SSE stream.
    """

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in self.SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        site, origin = headers.get("sec-fetch-site"), headers.get("origin")
        if site is not None:
            allowed = site in ("same-origin", "none")
        elif origin is None:
            allowed = True  # not a browser: cross-site request forgery needs one
        else:
            parts = urlsplit(origin)
            allowed = (parts.scheme, parts.netloc) == (
                scope.get("scheme", "http"),
                headers.get("host", ""),
            )
        if not allowed:
            response = PlainTextResponse("cross-origin request refused", status_code=403)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


# No inline scripts anywhere (templates load only files from /static). style-src allows
# 'unsafe-inline' because KaTeX writes style="" attributes on the math it renders and mermaid
# puts a <style> element inside every SVG it draws; styles cannot run code.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# FastAPI's /docs and /redoc pages load Swagger UI / ReDoc from a CDN with an inline script;
# they show no user data, so they get a looser policy of their own.
API_DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly; "
    "font-src 'self' https://fonts.gstatic.com; connect-src 'self'; worker-src blob:; "
    "frame-ancestors 'none'"
)
API_DOCS_PATHS = ("/docs", "/redoc")


class SecurityHeaders:
    """Adds the Content-Security-Policy and friends to every HTTP response (pure ASGI)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        policy = API_DOCS_POLICY if path.startswith(API_DOCS_PATHS) else CONTENT_SECURITY_POLICY
        extra = [
            (b"content-security-policy", policy.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
            (b"x-frame-options", b"DENY"),
        ]

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in extra if k not in present),
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)
