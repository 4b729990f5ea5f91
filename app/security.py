"""Passwords, the signed session, the current user, and cross-origin request refusal."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, HTTPException, Request, status
from pwdlib import PasswordHash
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.accounts.models import User
from app.db import SessionDep

password_hash = PasswordHash.recommended()  # argon2id

SESSION_USER_KEY = "user_id"


def hash_password(password: str) -> str:
    return password_hash.hash(password)


def verify_password(password: str, hashed: str) -> bool:
    return password_hash.verify(password, hashed)


def log_in(request: Request, user: User) -> None:
    # A fresh session at login, so a session fixed before login is worth nothing after.
    request.session.clear()
    request.session[SESSION_USER_KEY] = user.id


def log_out(request: Request) -> None:
    request.session.clear()


def optional_user(request: Request, session: SessionDep) -> User | None:
    user_id = request.session.get(SESSION_USER_KEY)
    if not isinstance(user_id, int):
        return None
    return session.get(User, user_id)


class LoginRequired(Exception):
    """Raised for a page that needs a user; the app turns it into a redirect to /login."""

    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


def current_user(request: Request, user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise LoginRequired(request.url.path)
    return user


def current_api_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "log in first")
    return user


OptionalUser = Annotated[User | None, Depends(optional_user)]
CurrentUser = Annotated[User, Depends(current_user)]


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
