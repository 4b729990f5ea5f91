"""The Jinja2 environment: templates/ at the top level, autoescaped (.html names)."""

from __future__ import annotations

from fastapi import Request
from fastapi.templating import Jinja2Templates

from app import formatting
from app.assets import VENDOR
from app.config import ROOT_DIR
from app.i18n import (
    HTML_LANG,
    N_,
    current_language,
    gettext,
    ngettext,
    say,
    translate,
    translate_source,
)
from app.quiz.rendering import markdown_html, markdown_inline_html
from app.security import csrf_token, request_user
from app.static_files import static_url

# Labels are marked here and translated where the header shows them.
NAV = [
    (N_("Start here"), "/start"),
    (N_("Cards"), "/cards"),
    (N_("Calculators"), "/calculators"),
    (N_("Demos"), "/demos"),
    (N_("Quiz"), "/quiz"),
    (N_("Study plan"), "/plan"),
    (N_("Progress"), "/progress"),
    (N_("Groups"), "/groups"),
]
# The header's switch: each language named in itself.
LANGUAGE_NAMES = {"zh": "中文", "en": "English"}


def _page_context(request: Request) -> dict[str, object]:
    # The cookie holds only the user id; the name shown in the header comes from the DB, read
    # once per request by the check that the session is live (app/security.py).
    user = request_user(request)
    lang = current_language()
    return {
        "nav": NAV,
        "lang": lang,
        "html_lang": HTML_LANG[lang],
        "language_names": LANGUAGE_NAMES,
        # The same page with only ?lang= changed, for the switch.
        "switch_query": {k: v for k, v in request.query_params.items() if k != "lang"},
        "user": user,
        "path": request.url.path,
        # htmx sends it from <body hx-headers:inherited>; plain forms as a hidden field.
        "csrf_token": csrf_token(request),
    }


templates = Jinja2Templates(directory=ROOT_DIR / "templates", context_processors=[_page_context])
templates.env.add_extension("jinja2.ext.i18n")
# Templates are code: a change ships with a restart. Checking each file's time on every render
# (Jinja's default) was 4% of a busy server's time.
templates.env.auto_reload = False
# {% trans %} blocks may wrap lines: whitespace is collapsed, as pybabel extracts them (babel.cfg).
templates.env.policies["ext.i18n.trimmed"] = True
# Newstyle: _("…", n=…) formats after translating and escapes the arguments.
templates.env.install_gettext_callables(gettext, ngettext, newstyle=True)
templates.env.globals["vendor"] = VENDOR
# {{ static_url("css/app.css") }}: the file's fingerprinted URL, cached by browsers for a year.
templates.env.globals["static_url"] = static_url
# {{ back_to_step(request) }}, the bar back to the path's step a page was opened from, and
# {{ topic_options(topics, selected) }} (app/quiz/topic_select.py) are registered by
# app/main.py: the journey and the quiz's queue read cards, whose examples render with these
# templates, so importing them here would close a circle (tests/test_layers.py).
templates.env.filters.update(
    # {{ label|t }}: a string marked with N_() in Python, in the request's language.
    t=translate,
    # {{ message|say }}: words app.calc or a demo's spec put together (app.calc.messages).
    say=say,
    # {{ term.source|sources }}: citations as they are, app.calc's own words between them.
    sources=translate_source,
    gb=formatting.gb,
    bytes_human=formatting.bytes_human,
    count_short=formatting.count_short,
    mastery_percent=formatting.mastery_percent,
    input_value=formatting.input_value,
    quiz_markdown=markdown_html,
    quiz_inline=markdown_inline_html,
)
