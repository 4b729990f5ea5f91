"""UI strings in the reader's language: gettext from translations/<locale>/LC_MESSAGES/messages.po.

The catalogues are compiled in memory when first used, so the repository holds no .mo files
and the app starts with no compile step (`scripts/i18n check` does the same compile in CI).

The language of a request lives in a context variable that LanguageMiddleware sets. Every
request runs in its own asyncio task, and sync endpoints run in a worker thread with a copy of
that task's context (anyio), so one request's language can never leak into another's render.
Installing a per-request translations object on the shared Jinja environment instead would
race between concurrent requests; and macros that templates import see no render context, so
the language cannot travel as a template variable either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from io import BytesIO

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import NullTranslations, Translations
from fastapi import Request
from markupsafe import Markup
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.calc import messages
from app.config import ROOT_DIR
from app.language import LANG_CHOICES, LANG_COOKIE, request_language
from app.security import checked_user

TRANSLATIONS_DIR = ROOT_DIR / "translations"
# ?lang= value → the gettext locale of its catalogue and the BCP 47 tag for <html lang>.
LOCALES = {"en": "en", "zh": "zh_CN"}
HTML_LANG = {"en": "en", "zh": "zh-CN"}

_language: ContextVar[str] = ContextVar("language", default="en")


@cache
def translations(lang: str) -> NullTranslations:
    """The compiled catalogue for `lang`; English is the source language, so no catalogue."""
    if lang == "en":
        return NullTranslations()
    po_path = TRANSLATIONS_DIR / LOCALES[lang] / "LC_MESSAGES" / "messages.po"
    with po_path.open("rb") as po:
        catalog = read_po(po, locale=LOCALES[lang])
    mo = BytesIO()
    write_mo(mo, catalog, use_fuzzy=False)  # a fuzzy guess is shown as the English original
    mo.seek(0)
    return Translations(mo)


def current_language() -> str:
    return _language.get()


@contextmanager
def language(lang: str) -> Iterator[None]:
    """gettext in `lang` inside the block, outside any request: a card's Chinese edition
    renders its worked examples (calculator fragments) in Chinese when the library loads."""
    token = _language.set(lang)
    try:
        yield
    finally:
        _language.reset(token)


def gettext(message: str) -> str:
    return translations(_language.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(_language.get()).ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 (the name pybabel looks for by default)
    """Marks a string for extraction where it is defined; it is translated where it is shown,
    with `translate` (the templates' `|t` filter), in the language of the request showing it.

    The lazy marker of the app: a label stays a plain English str where it is defined (a module
    constant, a DemoPage, a JSON answer under /api/), and only a page turns it into Chinese."""
    return message


def translate(message: object) -> object:
    """A string marked with N_() elsewhere, in the request's language. Unlike the templates'
    _(), the text is not a format string and not markup: a "%" stays itself and the result is
    escaped like any other value. A string nobody marked, markup (already translated), or not a
    string comes back as it is; so does a marked label's tail in brackets that app.calc adds to
    it ("Weights (CPU)", "KV cache (fp8)": the label translated, the tail kept)."""
    if isinstance(message, messages.Message):
        return say(message)  # put together at run time (a check's scope): its template's words
    if not isinstance(message, str) or isinstance(message, Markup) or not message:
        return message  # gettext("") would be the catalogue's header
    catalogue = translations(_language.get())
    translated = catalogue.gettext(message)
    if translated == message and message.endswith(")") and " (" in message:
        label, tail = message.split(" (", 1)
        if (head := catalogue.gettext(label)) != label:
            return f"{head} ({tail}"
    return translated


def translate_source(text: object) -> object:
    """A source column's text: citations, which stay as they are, and between them (after
    "; ") a few words of app.calc's own, marked with N_() in app/calculators/labels.py and
    said in the reader's language. Each part is translated alone (`translate`, which keeps a
    citation in brackets after a marked phrase); a "; " inside brackets does not split."""
    if not isinstance(text, str) or isinstance(text, Markup):
        return translate(text)
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith("; ", i):
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    return "; ".join(str(translate(part)) for part in parts)


def say_text(latex: str, words: tuple[str, ...]) -> str:
    r"""A formula with each of `words` (marked with N_() where they are listed) that stands alone
    in a \text{...} said in the request's language; in English, the formula as it is."""
    for word in words:
        if (said := gettext(word)) != word:
            latex = latex.replace(rf"\text{{{word}}}", rf"\text{{{said}}}")
    return latex


def say(text: str) -> str:
    """Words app.calc put together at run time in the request's language: a Message (a refused
    form, a refused layout) from its translated template and values; other text as it is."""
    if isinstance(text, messages.Message):
        return text.render(translations(_language.get()).gettext)
    return text


class LanguageMiddleware:
    """Chooses the request's language once (app/language.py) and makes gettext use it. Every
    HTML page now depends on it, so responses say Vary, and an explicit ?lang= is remembered
    in a cookie. Runs inside SessionMiddleware: a signed-in user's own setting counts."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The JSON API under /api/ stays English whatever the reader's language (gettext keeps
        # the default "en"), and static files are the same in every language.
        if scope["type"] != "http" or scope["path"].startswith(("/static/", "/api/")):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if "lang" not in request.query_params:
            # A signed-in user's setting is read from the database, with the check that the
            # session is live: one read, off the event loop (nothing for a visitor).
            await checked_user(request)
        lang = request_language(request)
        explicit = request.query_params.get("lang") in LANG_CHOICES
        token = _language.set(lang)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                vary = [v.strip() for v in headers.get("vary", "").split(",") if v.strip()]
                headers["Vary"] = ", ".join(dict.fromkeys([*vary, "Accept-Language", "Cookie"]))
                if explicit:
                    headers.append(
                        "Set-Cookie",
                        f"{LANG_COOKIE}={lang}; Max-Age={365 * 24 * 3600}; Path=/; SameSite=lax",
                    )
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            _language.reset(token)
