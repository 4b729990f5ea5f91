"""Which language a page is shown in, chosen the same way by every feature (cards, quiz,
glossary): ?lang=, else a signed-in user's own setting, else the cookie an explicit choice
left, else Accept-Language."""

from __future__ import annotations

from fastapi import Request

from app.cards.models import LANGUAGES
from app.security import request_user

LANG_COOKIE = "lang"
LANG_CHOICES = {"en", *LANGUAGES}


def request_language(request: Request) -> str:
    """Which language to show: ?lang= (explicit, and a link that keeps it can be shared), else
    the signed-in user's setting, else the cookie an explicit choice left, else the browser's
    first Accept-Language (zh-CN, zh-TW... → zh). Worked out once per request."""
    cached = getattr(request.state, "language", None)
    if cached is None:
        cached = request.state.language = _choose(request)
    return cached


def _user_language(request: Request) -> str | None:
    # The session cookie holds only the user id (app/security.py); the setting is in the DB,
    # read with the check that the session is live.
    user = request_user(request)
    return user.language if user is not None else None


def _choose(request: Request) -> str:
    choices = (
        lambda: request.query_params.get("lang"),
        lambda: _user_language(request),
        lambda: request.cookies.get(LANG_COOKIE),
    )
    for choice in choices:
        if (lang := choice()) in LANG_CHOICES:
            return lang
    first = request.headers.get("accept-language", "").split(",")[0].strip().lower()
    return "zh" if first.startswith("zh") else "en"
