"""Register (open, by invite or closed), log in (rate-limited), log out."""

from __future__ import annotations

import logging
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import AfterValidator
from sqlmodel import func, select

from app.accounts.invites import InviteRefused, invite_problem
from app.accounts.models import User
from app.accounts.schemas import LABELS, Credentials
from app.accounts.service import UsernameTaken, create_account
from app.calc.messages import words_of
from app.config import Settings
from app.db import SessionDep, without_nul
from app.forms import parse_form
from app.heavy_work import HASHING
from app.i18n import N_, translate
from app.language import LANG_CHOICES
from app.ratelimit import (
    SlidingWindow,
    client_address,
    password_attempt_wait,
    record_password_failure,
    wait_message,
)
from app.route_guards import GuardedRoute
from app.security import CurrentUser, log_in, log_out, unknown_user_hash, verify_password
from app.templating import templates

log = logging.getLogger(__name__)

router = APIRouter(route_class=GuardedRoute, tags=["pages"], include_in_schema=False)

# Every field optional at the HTTP level, so a missing one gets the form's own message. A NUL
# is no account's name or password, and never reaches a query.
FormText = Annotated[str, Form(max_length=1000), AfterValidator(without_nul)]


def _safe_next(target: str | None) -> str:
    """Only a path on this site, so a crafted link cannot bounce a user elsewhere."""
    if not target:
        return "/quiz"
    parts = urlsplit(target)
    # A browser reads "/\\host" as "//host": another site.
    if (parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//")
            or "\\" in target):  # fmt: skip
        return "/quiz"
    return target


def _form(
    request: Request,
    page: str,
    errors: list[str],
    status: int,
    username: str = "",
    next_path: str = "",
    invite: str = "",
    retry_after_s: int | None = None,
    sent_here: bool = False,
) -> HTMLResponse:
    settings: Settings = request.app.state.settings
    response = templates.TemplateResponse(
        request,
        f"accounts/{page}.html",
        {
            # Marked with N_() or Messages where they are written: said in the reader's language.
            "errors": [translate(e) for e in errors],
            "username": username,
            "next": next_path,
            "invite": invite,
            "registration": settings.registration,
            # A page that needs an account sent the reader here: say so (issue #29).
            "sent_here": sent_here,
        },
        status_code=status,
    )
    if retry_after_s is not None:
        response.headers["Retry-After"] = str(retry_after_s)
    return response


def _limiter(request: Request, name: str) -> SlidingWindow:
    return request.app.state.limits[name]


def _too_many(
    request: Request, page: str, wait_s: float, what: str, username: str, next_path: str
) -> HTMLResponse:
    retry_after_s = max(1, int(wait_s + 0.999))
    return _form(
        request,
        page,
        [wait_message(wait_s, what)],
        429,
        username,
        next_path,
        retry_after_s=retry_after_s,
    )


@router.get("/register", response_class=HTMLResponse)
def register_form(request: Request, next: str = "", invite: str = "") -> HTMLResponse:
    return _form(request, "register", [], 200, next_path=_safe_next(next), invite=invite[:500])


# Sync routes on purpose: an argon2 hash takes a quarter of a second of CPU, which would
# stall every other request if it ran on the event loop; and each takes one of the few
# hashing slots first (app/heavy_work.py), so a flood of them cannot take every core.
@router.post("/register", response_class=HTMLResponse, dependencies=[HASHING])
def register(
    request: Request,
    session: SessionDep,
    username: FormText = "",
    password: FormText = "",
    next: FormText = "",
    invite: FormText = "",
) -> Response:
    settings: Settings = request.app.state.settings
    next_path = _safe_next(next)
    if settings.registration == "closed":
        return _form(request, "register", [], 403, username, next_path)
    wait = _limiter(request, "register_address").hit(client_address(request))
    if wait:
        return _too_many(request, "register", wait, N_("new accounts"), username, next_path)
    creds, errors = parse_form(Credentials, {"username": username, "password": password}, LABELS)
    invite_code = invite if settings.registration == "invite" else None
    if invite_code is not None:
        # Checked here too, so every problem with the form is reported at once; the code is
        # checked again, and spent, when the account is written.
        problem = invite_problem(session, invite_code)
        if problem:
            errors.append(problem)
    if creds is None or errors:
        return _form(request, "register", errors, 422, username.strip(), next_path, invite)
    try:
        user = create_account(session, creds, invite_code)
    except (UsernameTaken, InviteRefused) as exc:  # taken or used up since the checks above
        return _form(request, "register", [words_of(exc)], 422, creds.username, next_path, invite)
    log.info("registered user %s (id %s)", user.username, user.id)
    log_in(request, session, user)
    return RedirectResponse(next_path, status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "") -> HTMLResponse:
    return _form(request, "login", [], 200, next_path=_safe_next(next), sent_here=bool(next))


@router.post("/login", response_class=HTMLResponse, dependencies=[HASHING])
def login(
    request: Request,
    session: SessionDep,
    username: FormText = "",
    password: FormText = "",
    next: FormText = "",
) -> Response:
    next_path = _safe_next(next)
    username = username.strip()
    wait = password_attempt_wait(request, username)
    if wait:
        return _too_many(request, "login", wait, N_("log-in attempts"), username, next_path)
    # One name whatever its case, through the same lower() as the unique index (User).
    user = session.exec(
        select(User).where(func.lower(User.username) == func.lower(username))
    ).first()
    known_hash = user.password_hash if user is not None else unknown_user_hash()
    if not verify_password(password, known_hash) or user is None:
        record_password_failure(request, username)
        log.info("failed log-in for %r from %s", username, client_address(request))
        wrong = N_("Wrong username or password")
        return _form(request, "login", [wrong], 422, username, next_path)
    if user.disabled:
        message = N_("This account is disabled: ask the admin of this server")
        return _form(request, "login", [message], 403, username, next_path)
    log_in(request, session, user)
    return RedirectResponse(next_path, status_code=303)


@router.post("/logout")
def logout(request: Request, session: SessionDep) -> RedirectResponse:
    log_out(request, session)
    return RedirectResponse("/", status_code=303)


@router.post("/account/language")
def set_language(
    user: CurrentUser, session: SessionDep, language: FormText = "", next: FormText = ""
) -> RedirectResponse:
    """The header's switch for a signed-in user: kept on the account, so it follows them to
    every page and device; an unknown value clears it (back to the cookie and the browser)."""
    user.language = language if language in LANG_CHOICES else None
    session.add(user)
    session.commit()
    return RedirectResponse(_safe_next(next or "/"), status_code=303)
