"""The topic <select>'s options, kept once rendered (app/quiz/topic_select.py): the same markup
the macro renders, the choice marked, and each language its own."""

from __future__ import annotations

from app.i18n import language
from app.quiz.review_queue import TopicOptions
from app.quiz.topic_select import topic_options
from app.templating import templates

TOPICS = TopicOptions(cards=(("zero-stages", "ZeRO <stages>"),), tags=(("memory", "#memory"),))


def _macro(selected: str) -> str:
    module = templates.env.get_template("quiz/_macros.html").module
    return str(module.topic_options(TOPICS, selected))  # type: ignore[attr-defined]


def test_the_kept_options_are_the_macro_s_and_mark_the_choice() -> None:
    with language("en"):
        kept = topic_options(TOPICS, "memory")
        assert str(kept) == _macro("memory")
    assert '<option value="memory" selected>#memory</option>' in kept
    assert '<option value="zero-stages">ZeRO &lt;stages&gt;</option>' in kept  # escaped
    with language("en"):
        assert "selected" not in topic_options(TOPICS)


def test_each_language_keeps_its_own_labels() -> None:
    with language("en"):
        english = topic_options(TOPICS)
    with language("zh"):
        chinese = topic_options(TOPICS)
        assert str(chinese) == _macro("")
    assert "All topics" in english
    assert "All topics" not in chinese
