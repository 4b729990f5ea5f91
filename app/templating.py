"""The Jinja2 environment: templates/ at the top level, autoescaped (.html names)."""

from __future__ import annotations

from fastapi import Request
from fastapi.templating import Jinja2Templates
from sqlmodel import Session

from app import formatting
from app.accounts.models import User
from app.assets import VENDOR
from app.config import ROOT_DIR
from app.quiz.rendering import markdown_html, markdown_inline_html
from app.security import SESSION_USER_KEY, csrf_token

NAV = [
    ("Cards", "/cards"),
    ("Calculators", "/calculators"),
    ("Demos", "/demos"),
    ("Quiz", "/quiz"),
    ("Progress", "/progress"),
    ("Groups", "/groups"),
]


def _page_context(request: Request) -> dict[str, object]:
    # The cookie holds only the user id; the name shown in the header comes from the DB.
    user = None
    user_id = request.session.get(SESSION_USER_KEY)
    if isinstance(user_id, int):
        with Session(request.app.state.engine) as session:
            user = session.get(User, user_id)
        if user is not None and user.disabled:
            user = None
    return {
        "nav": NAV,
        "user": user,
        "path": request.url.path,
        # htmx sends it from <body hx-headers:inherited>; plain forms as a hidden field.
        "csrf_token": csrf_token(request),
    }


templates = Jinja2Templates(directory=ROOT_DIR / "templates", context_processors=[_page_context])
templates.env.globals["vendor"] = VENDOR
templates.env.filters.update(
    gb=formatting.gb,
    bytes_human=formatting.bytes_human,
    count_short=formatting.count_short,
    quiz_markdown=markdown_html,
    quiz_inline=markdown_inline_html,
)
