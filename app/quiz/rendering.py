"""Quiz Markdown (prompts, options, solutions) to HTML, with math marked for KaTeX like cards."""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.dollarmath import dollarmath_plugin

# Raw HTML off, as for cards: a quiz file is text.
_MD = (
    MarkdownIt("commonmark", {"html": False, "typographer": True})
    .enable("table")
    .use(dollarmath_plugin, allow_space=False, double_inline=True)
)


@lru_cache(maxsize=4096)
def markdown_html(text: str) -> Markup:
    return Markup(_MD.render(text))  # noqa: S704 - markdown-it escapes: raw HTML is off


@lru_cache(maxsize=4096)
def markdown_inline_html(text: str) -> Markup:
    """One line (an option's text) without the wrapping <p>."""
    return Markup(_MD.renderInline(text))  # noqa: S704 - as above
