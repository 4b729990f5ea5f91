"""The options of the topic <select> on the question, card browser and mock pages, kept once
rendered: an option for every card and tag is most of a question page's template time, and
the same on every page of a language."""

from __future__ import annotations

from functools import lru_cache

from markupsafe import Markup

from app.i18n import current_language
from app.quiz.review_queue import TopicOptions
from app.templating import templates


# Bounded: `selected` comes from the address, and a choice that is no option renders as none.
@lru_cache(maxsize=512)
def _rendered(topics: TopicOptions, selected: str, lang: str) -> Markup:
    module = templates.env.get_template("quiz/_macros.html").module
    return Markup(module.topic_options(topics, selected))  # type: ignore[attr-defined]


def topic_options(topics: TopicOptions, selected: str = "") -> Markup:
    """The macro topic_options of quiz/_macros.html, in the request's language (its labels
    are translated), rendered once for each choice."""
    return _rendered(topics, selected, current_language())
