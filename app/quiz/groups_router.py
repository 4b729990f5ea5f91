"""Study group pages: the list with create and join forms, a group's page, sharing, leaving."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from app.calc.messages import Message, words_of
from app.db import SessionDep, get_row
from app.forms import SubmittedForm, parse_form
from app.i18n import N_, say
from app.language import request_language
from app.quiz.groups import (
    GroupError,
    create_group,
    group_view,
    groups_of,
    join_group,
    leave_group,
    membership,
    set_sharing,
)
from app.quiz.models import StudyGroup
from app.route_guards import GuardedRoute
from app.security import CurrentUser
from app.templating import templates
from app.text_rules import has_control_characters

router = APIRouter(
    route_class=GuardedRoute, prefix="/groups", tags=["pages"], include_in_schema=False
)


def _plain_text(name: str) -> str:
    if has_control_characters(name):
        raise ValueError(Message(N_("must not contain control or text-direction characters")))
    return name


class NewGroup(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=2, max_length=60),
        AfterValidator(_plain_text),
    ]


class JoinGroup(BaseModel):
    model_config = ConfigDict(extra="ignore")
    invite_code: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=4, max_length=20)
    ]


LABELS = {"name": "Group name", "invite_code": "Invite code"}


def _list_page(
    request: Request, user: CurrentUser, session: SessionDep, status_code: int = 200,
    **extra: object,
) -> HTMLResponse:  # fmt: skip
    context = {"groups": groups_of(session, user), **extra}
    return templates.TemplateResponse(request, "quiz/groups.html", context, status_code)


@router.get("", response_class=HTMLResponse)
def group_list(request: Request, user: CurrentUser, session: SessionDep) -> HTMLResponse:
    return _list_page(request, user, session)


@router.post("", response_class=HTMLResponse, response_model=None)
def group_create(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    data, errors = parse_form(NewGroup, form, LABELS)
    if data is None:
        return _list_page(request, user, session, 422, create_errors=errors)
    group = create_group(session, user, data.name)
    return RedirectResponse(f"/groups/{group.id}", status_code=303)


@router.post("/join", response_class=HTMLResponse, response_model=None)
def group_join(
    request: Request, user: CurrentUser, session: SessionDep, form: SubmittedForm
) -> HTMLResponse | RedirectResponse:
    data, errors = parse_form(JoinGroup, form, LABELS)
    if data is None:
        return _list_page(request, user, session, 422, join_errors=errors)
    try:
        group = join_group(session, user, data.invite_code)
    except GroupError as exc:
        return _list_page(request, user, session, 422, join_errors=[say(words_of(exc))])
    return RedirectResponse(f"/groups/{group.id}", status_code=303)


def _member_group(session: SessionDep, user: CurrentUser, group_id: int) -> StudyGroup:
    """The group, for a member; 404 for everyone else, so a group's existence does not leak."""
    group = get_row(session, StudyGroup, group_id)
    if group is None or membership(session, user, group_id) is None:
        raise HTTPException(404, N_("no such group, or you are not a member"))
    return group


@router.get("/{group_id}", response_class=HTMLResponse)
def group_page(
    request: Request, group_id: int, user: CurrentUser, session: SessionDep
) -> HTMLResponse:
    group = _member_group(session, user, group_id)
    state = request.app.state
    lang = request_language(request)
    members, summary = group_view(session, group, state.quiz, state.cards, lang=lang)
    me = membership(session, user, group_id)
    return templates.TemplateResponse(
        request,
        "quiz/group.html",
        {"group": group, "members": members, "summary": summary, "me": me},
    )


@router.post("/{group_id}/sharing")
def group_sharing(
    group_id: int,
    user: CurrentUser,
    session: SessionDep,
    share: Annotated[str, Form(max_length=5)] = "",
) -> RedirectResponse:
    _member_group(session, user, group_id)
    member = membership(session, user, group_id)
    assert member is not None
    set_sharing(session, member, share == "yes")
    return RedirectResponse(f"/groups/{group_id}", status_code=303)


@router.post("/{group_id}/leave")
def group_leave(group_id: int, user: CurrentUser, session: SessionDep) -> RedirectResponse:
    _member_group(session, user, group_id)
    member = membership(session, user, group_id)
    assert member is not None
    leave_group(session, member)
    return RedirectResponse("/groups", status_code=303)
