"""The admin page: the worker and its queue, recent demo runs, users, invite codes."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.accounts import invites
from app.accounts.invites import MAX_DAYS, MAX_USES
from app.accounts.models import Invite, User
from app.admin import service
from app.db import SessionDep, get_row
from app.errors import is_htmx
from app.i18n import N_
from app.live.queue_rules import QueueEntry
from app.live.worker_client import WorkerUnavailable
from app.route_guards import GuardedRoute
from app.security import AdminUser
from app.templating import templates

log = logging.getLogger(__name__)

router = APIRouter(
    route_class=GuardedRoute, prefix="/admin", tags=["admin"], include_in_schema=False
)


async def _worker_report(request: Request, entries: list[QueueEntry]) -> dict[str, Any]:
    try:
        status = await request.app.state.worker_pool.any_status(timeout_s=2.0)
        report: dict[str, Any] = {"ok": True, "status": status}
    except WorkerUnavailable as exc:
        report = {"ok": False, "error": str(exc)}
    running = sum(entry.running for entry in entries)
    report["queue"] = {"running": running, "waiting": len(entries) - running}
    return report


def _tables(session: Session) -> dict[str, Any]:
    """What the page reads from SQLite: the users once, for their table and the runs' names."""
    users = service.all_users(session)
    return {
        "runs": service.recent_runs(session),
        "users": users,
        "usernames": {u.id: u.username for u in users},
        "invites": invites.list_invites(session),
    }


@router.get("", response_class=HTMLResponse)
async def admin_page(request: Request, admin: AdminUser, session: SessionDep) -> HTMLResponse:
    # Async for the worker's status; the reads go to the thread pool, off the event loop.
    queue_entries = await request.app.state.demo_queue.entries()
    worker = await _worker_report(request, queue_entries)
    tables = await run_in_threadpool(_tables, session)
    return templates.TemplateResponse(
        request,
        "admin/index.html",
        {
            "worker": worker,
            "queue_entries": queue_entries,
            **tables,
            "registration": request.app.state.settings.registration,
            "max_days": MAX_DAYS,
            "max_uses": MAX_USES,
            "register_url": _register_url(request),
        },
    )


def _register_url(request: Request) -> str:
    # Templates add ?invite=CODE; codes are URL-safe, so nothing needs quoting.
    return str(request.url_for("register_form"))


@router.post("/users/{user_id}/disabled", response_class=HTMLResponse)
def set_user_disabled(
    request: Request,
    user_id: int,
    admin: AdminUser,
    session: SessionDep,
    disabled: Annotated[bool, Form()],
) -> Response:
    user = get_row(session, User, user_id)
    if user is None:
        raise HTTPException(404, N_("no such user"))
    if user.id == admin.id and disabled:
        raise HTTPException(422, N_("you cannot disable your own account"))
    service.set_disabled(session, user, disabled)
    log.info(
        "admin %s %s user %s", admin.username, "disabled" if disabled else "enabled", user.username
    )
    if is_htmx(request):
        return templates.TemplateResponse(request, "admin/_user_row.html", {"u": user})
    return RedirectResponse("/admin", status_code=303)


@router.post("/users/{user_id}/sessions/end", response_class=HTMLResponse)
def sign_user_out_everywhere(
    request: Request, user_id: int, admin: AdminUser, session: SessionDep
) -> Response:
    """Ends every session of the user: for a lost device or a leaked cookie. The admin's own
    included, if they pick their own row."""
    user = get_row(session, User, user_id)
    if user is None:
        raise HTTPException(404, N_("no such user"))
    ended = service.sign_out_everywhere(session, user)
    log.info("admin %s signed %s out of %d sessions", admin.username, user.username, ended)
    if is_htmx(request):
        context = {"u": user, "sessions_ended": ended}
        return templates.TemplateResponse(request, "admin/_user_row.html", context)
    return RedirectResponse("/admin", status_code=303)


@router.post("/invites", response_class=HTMLResponse)
def create_invite(
    request: Request,
    admin: AdminUser,
    session: SessionDep,
    days: Annotated[int, Form(ge=1, le=MAX_DAYS)] = 7,
    uses: Annotated[int, Form(ge=1, le=MAX_USES)] = 1,
) -> HTMLResponse:
    invite = invites.make_invite(session, admin.id, days, uses)
    log.info("admin %s made invite %s: %d uses, %d days", admin.username, invite.id, uses, days)
    # htmx gets the new code and, swapped out of band, the list with it in.
    partial = is_htmx(request)
    return templates.TemplateResponse(
        request,
        "admin/_invite.html" if partial else "admin/invite.html",
        {
            "invite": invite,
            "register_url": _register_url(request),
            "invites": invites.list_invites(session) if partial else None,
        },
    )


@router.post("/invites/{invite_id}/revoke", response_class=HTMLResponse)
def revoke_invite(
    request: Request, invite_id: int, admin: AdminUser, session: SessionDep
) -> Response:
    invite = get_row(session, Invite, invite_id)
    if invite is None:
        raise HTTPException(404, N_("no such invite"))
    invites.revoke_invite(session, invite)
    log.info("admin %s revoked invite %s", admin.username, invite_id)
    if is_htmx(request):
        (listing,) = invites.list_invites(session, invite_id)
        return templates.TemplateResponse(
            request,
            "admin/_invite_row.html",
            {"i": listing, "register_url": _register_url(request)},
        )
    return RedirectResponse("/admin", status_code=303)


@router.post("/queue/{entry_id}/cancel", response_class=HTMLResponse)
async def cancel_queued_run(
    request: Request, entry_id: int, admin: AdminUser, session: SessionDep
) -> Response:
    """Takes a waiting run out of the line, or stops the running one's job, whichever web
    process holds it (the line is in the database: app/live/queue_store.py)."""
    queue = request.app.state.demo_queue
    entry = await queue.cancel(entry_id)
    if entry is None:
        raise HTTPException(404, N_("no such run in the demo queue (it may have finished)"))
    state = "running" if entry.running else "waiting"
    owner = entry.owner
    log.info(
        "admin %s cancelled %s %s run %d of %s from %s",
        admin.username, state, entry.demo, entry.id, owner.account, owner.address,
    )  # fmt: skip
    if is_htmx(request):
        users = await run_in_threadpool(service.all_users, session)
        context = {
            "queue_entries": await queue.entries(),
            "usernames": {u.id: u.username for u in users},
        }
        return templates.TemplateResponse(request, "admin/_queue.html", context)
    return RedirectResponse("/admin", status_code=303)
