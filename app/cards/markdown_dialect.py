"""The Markdown the cards are written in: CommonMark with tables, strikethrough, $math$,
admonitions and footnotes; raw HTML off (a card is text, and escaping it keeps a bad card
harmless). The card renderer (app/cards/service.py) adds front matter, heading anchors and its
fence rules; the search's plain text (app/cards/plain_text.py) parses with it as it is."""

from __future__ import annotations

from markdown_it import MarkdownIt
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin


def card_markdown() -> MarkdownIt:
    """A new parser of the dialect, for the caller to extend."""
    return (
        MarkdownIt("commonmark", {"html": False, "typographer": True})
        .enable("table")
        .enable("strikethrough")
        .use(dollarmath_plugin, allow_space=False, double_inline=True)
        .use(admon_plugin)
        .use(footnote_plugin)
    )
