"""The admin page: the worker and its queue, recent demo runs, users, invite codes."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.accounts.invites import MAX_DAYS, make_invite
from app.accounts.models import User
from app.admin import service
from app.db import SessionDep
from app.live.worker_client import WorkerUnavailable
from app.security import AdminUser
from app.templating import templates

log = logging.getLogger(__name__)

router = APIRouter(prefix="/admin", tags=["admin"], include_in_schema=False)


async def _worker_report(request: Request) -> dict[str, Any]:
    try:
        status = await request.app.state.worker_client.status(timeout_s=2.0)
        report: dict[str, Any] = {"ok": True, "status": status}
    except WorkerUnavailable as exc:
        report = {"ok": False, "error": str(exc)}
    queue = getattr(request.app.state, "demo_queue", None)
    if queue is not None:
        report["queue"] = {"running": queue.running, "waiting": queue.waiting}
    return report


@router.get("", response_class=HTMLResponse)
async def admin_page(request: Request, admin: AdminUser, session: SessionDep) -> HTMLResponse:
    return templates.TemplateResponse(
        request,
        "admin/index.html",
        {
            "worker": await _worker_report(request),
            "runs": service.recent_runs(session),
            "users": service.all_users(session),
            "registration": request.app.state.settings.registration,
            "max_days": MAX_DAYS,
            "usernames": {u.id: u.username for u in service.all_users(session)},
        },
    )


def _partial(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


@router.post("/users/{user_id}/disabled", response_class=HTMLResponse)
def set_user_disabled(
    request: Request,
    user_id: int,
    admin: AdminUser,
    session: SessionDep,
    disabled: Annotated[bool, Form()],
) -> Response:
    user = session.get(User, user_id)
    if user is None:
        raise HTTPException(404, "no such user")
    if user.id == admin.id and disabled:
        raise HTTPException(422, "you cannot disable your own account")
    service.set_disabled(session, user, disabled)
    log.info(
        "admin %s %s user %s", admin.username, "disabled" if disabled else "enabled", user.username
    )
    if _partial(request):
        return templates.TemplateResponse(request, "admin/_user_row.html", {"u": user})
    return RedirectResponse("/admin", status_code=303)


@router.post("/invites", response_class=HTMLResponse)
def create_invite(
    request: Request, admin: AdminUser, days: Annotated[int, Form(ge=1, le=MAX_DAYS)] = 7
) -> HTMLResponse:
    code, expires = make_invite(request.app.state.settings.session_secret, days)
    log.info("admin %s made an invite code valid for %d days", admin.username, days)
    link = str(request.url_for("register_form").include_query_params(invite=code))
    return templates.TemplateResponse(
        request,
        "admin/_invite.html" if _partial(request) else "admin/invite.html",
        {"code": code, "expires": expires, "link": link},
    )
