"""Loads content/cards/*.md once: front matter checked, Markdown rendered, examples computed."""

from __future__ import annotations

import html
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from pydantic import ValidationError

from app.cards.examples import render_example
from app.cards.models import Card, CardMeta


class CardError(ValueError):
    """A card file that does not meet the contract; names the file and what is wrong."""


def _fence(self, tokens, idx, options, env) -> str:  # noqa: ANN001 - markdown-it's signature
    token = tokens[idx]
    kind, _, arg = token.info.strip().partition(" ")
    if kind == "mermaid":
        env["has_diagram"] = True
        return f'<pre class="mermaid">{html.escape(token.content)}</pre>\n'
    if kind == "example":
        return render_example(arg.strip(), token.content)
    return self.fence(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    # Raw HTML stays off: a card is text, and escaping it keeps a bad card harmless.
    md = (
        MarkdownIt("commonmark", {"html": False, "typographer": True})
        .enable("table")
        .enable("strikethrough")
        .use(front_matter_plugin)
        .use(dollarmath_plugin, allow_space=False, double_inline=True)
        .use(admon_plugin)
        .use(anchors_plugin, max_level=3, permalink=True)
        .use(footnote_plugin)
    )
    md.add_render_rule("fence", _fence)
    return md


def render_card(source: str, name: str = "<card>") -> Card:
    md = _markdown()
    tokens = md.parse(source)
    if not tokens or tokens[0].type != "front_matter":
        raise CardError(f"{name}: a card starts with front matter between --- lines")
    try:
        meta = CardMeta.model_validate(yaml.safe_load(tokens[0].content))
    except (yaml.YAMLError, ValidationError) as exc:
        raise CardError(f"{name}: bad front matter: {exc}") from exc
    env: dict[str, object] = {}
    try:
        body = md.renderer.render(tokens, md.options, env)
    except ValueError as exc:
        raise CardError(f"{name}: {exc}") from exc
    return Card(meta=meta, html=body, has_diagram=bool(env.get("has_diagram")))


class CardLibrary:
    """Every card, keyed by id, in title order."""

    def __init__(self, cards: list[Card]) -> None:
        self._by_id = {c.meta.id: c for c in sorted(cards, key=lambda c: c.meta.title)}

    @classmethod
    def load(cls, cards_dir: Path) -> CardLibrary:
        cards = []
        for path in sorted(cards_dir.glob("*.md")):
            card = render_card(path.read_text(encoding="utf-8"), path.name)
            if card.meta.id != path.stem:
                raise CardError(f"{path.name}: id {card.meta.id!r} must match the file name")
            cards.append(card)
        return cls(cards)

    def get(self, card_id: str) -> Card | None:
        return self._by_id.get(card_id)

    def all(self) -> list[Card]:
        return list(self._by_id.values())

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._by_id
