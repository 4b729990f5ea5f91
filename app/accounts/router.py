"""Register, log in, log out."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from app.accounts.models import User
from app.accounts.schemas import LABELS, Credentials
from app.db import SessionDep
from app.forms import parse_form
from app.security import hash_password, log_in, log_out, verify_password
from app.templating import templates

router = APIRouter(tags=["pages"], include_in_schema=False)

# Every field optional at the HTTP level, so a missing one gets the form's own message.
FormText = Annotated[str, Form(max_length=1000)]


def _safe_next(target: str | None) -> str:
    """Only a path on this site, so a crafted link cannot bounce a user elsewhere."""
    if not target:
        return "/quiz"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return "/quiz"
    return target


def _form(
    request: Request,
    page: str,
    errors: list[str],
    status: int,
    username: str = "",
    next_path: str = "",
) -> HTMLResponse:
    return templates.TemplateResponse(
        request,
        f"accounts/{page}.html",
        {"errors": errors, "username": username, "next": next_path},
        status_code=status,
    )


@router.get("/register", response_class=HTMLResponse)
def register_form(request: Request, next: str = "") -> HTMLResponse:
    return _form(request, "register", [], 200, next_path=_safe_next(next))


# Sync routes on purpose: an argon2 hash takes a quarter of a second of CPU, which would
# stall every other request if it ran on the event loop.
@router.post("/register", response_class=HTMLResponse)
def register(
    request: Request,
    session: SessionDep,
    username: FormText = "",
    password: FormText = "",
    next: FormText = "",
) -> Response:
    next_path = _safe_next(next)
    creds, errors = parse_form(Credentials, {"username": username, "password": password}, LABELS)
    if creds is None:
        return _form(request, "register", errors, 422, username, next_path)
    user = User(username=creds.username, password_hash=hash_password(creds.password))
    session.add(user)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return _form(
            request,
            "register",
            ["Username: already taken, pick another"],
            422,
            creds.username,
            next_path,
        )
    session.refresh(user)
    log_in(request, user)
    return RedirectResponse(next_path, status_code=303)


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "") -> HTMLResponse:
    return _form(request, "login", [], 200, next_path=_safe_next(next))


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    session: SessionDep,
    username: FormText = "",
    password: FormText = "",
    next: FormText = "",
) -> Response:
    next_path = _safe_next(next)
    username = username.strip()
    user = session.exec(select(User).where(User.username == username)).first()
    if user is None or not verify_password(password, user.password_hash):
        return _form(request, "login", ["Wrong username or password"], 422, username, next_path)
    log_in(request, user)
    return RedirectResponse(next_path, status_code=303)


@router.post("/logout")
def logout(request: Request) -> RedirectResponse:
    log_out(request)
    return RedirectResponse("/", status_code=303)
