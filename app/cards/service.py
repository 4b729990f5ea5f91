"""Loads content/cards/*.md once: front matter checked, Markdown rendered, examples computed,
sections checked and links between cards resolved."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable
from datetime import date
from functools import lru_cache
from pathlib import Path
from unicodedata import east_asian_width

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from pydantic import ValidationError

from app.cards.audit import audit_problems, prose_figures
from app.cards.examples import folded_example, render_example
from app.cards.frameworks import SOURCES_SECTION, undated
from app.cards.markdown_dialect import card_markdown
from app.cards.models import (
    CLOSING_SECTIONS,
    FIRST_SECTION,
    LANGUAGES,
    WORKED_EXAMPLE,
    ZH_SECTIONS,
    Card,
    CardMeta,
    Heading,
)
from app.i18n import language
from app.yaml_text import load_yaml

# How each edition's language names the fixed sections (English names them itself).
SECTION_NAMES = {"zh": ZH_SECTIONS}
FIXED_SECTIONS = {FIRST_SECTION, WORKED_EXAMPLE, *CLOSING_SECTIONS}
# A card gets a table of contents when it is long: about three screens of a desktop window or
# more, some 5,000 characters of text (a CJK character counts as two: it is as wide as two
# Latin letters), the worked example that shows counting as 3,000 (a calculator's result is a
# screen or two of tables and a chart; the folded ones after it are a line each). Every card
# in content/ is that long; a stub is not.
LONG_CARD_CHARS = 5_000
SHOWN_EXAMPLE_CHARS = 3_000
# Front matter an edition takes from its English card: it writes only id, title and summary.
INHERITED_FIELDS = ("tags", "difficulty", "prerequisites", "calculators", "demos", "checked",
                    "sources", "derived", "inputs")  # fmt: skip


class CardError(ValueError):
    """A card file that does not meet the contract; names the file and what is wrong."""


def _fence(self, tokens, idx, options, env) -> str:  # noqa: ANN001 - markdown-it's signature
    token = tokens[idx]
    kind, _, arg = token.info.strip().partition(" ")
    if kind == "mermaid":
        env["has_diagram"] = True
        return f'<pre class="mermaid">{html.escape(token.content)}</pre>\n'
    if kind == "example":
        # The first worked example shows; the ones after it fold away under a summary.
        earlier = env.setdefault("examples", [])
        example = (arg.strip(), token.content)
        rendered = folded_example(*example, earlier) if earlier else render_example(*example)
        earlier.append(example)
        return rendered
    return self.fence(tokens, idx, options, env)


def _table_open(self, tokens, idx, options, env) -> str:  # noqa: ANN001 - markdown-it's signature
    # A table wider than a phone scrolls inside its own box, never the page (app.css .table-wrap).
    return '<div class="table-wrap">' + self.renderToken(tokens, idx, options, env)


def _table_close(self, tokens, idx, options, env) -> str:  # noqa: ANN001
    return self.renderToken(tokens, idx, options, env) + "</div>\n"


# Marks where each h2 section of a card's html starts, so a page can put something after a
# section (app/cards/check.py): the worked examples' calculator fragments have h2s of their own.
SECTION_START = "<!-- section -->"


def _heading_open(self, tokens, idx, options, env) -> str:  # noqa: ANN001 - markdown-it's
    mark = SECTION_START if tokens[idx].tag == "h2" else ""
    return mark + self.renderToken(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    md = card_markdown().use(front_matter_plugin).use(anchors_plugin, max_level=3, permalink=True)
    md.add_render_rule("fence", _fence)
    md.add_render_rule("heading_open", _heading_open)
    md.add_render_rule("table_open", _table_open)
    md.add_render_rule("table_close", _table_close)
    return md


def _h2_positions(tokens: list) -> list[tuple[int, str]]:  # noqa: ANN001 - markdown-it tokens
    return [
        (i, tokens[i + 1].content.strip())
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h2"
    ]


def _is_example(token) -> bool:  # noqa: ANN001 - a markdown-it token
    return token.type == "fence" and token.info.strip().startswith("example")


def _reading_length(tokens: list) -> int:
    """How much a reader scrolls past, in characters of text (LONG_CARD_CHARS)."""
    text = "".join(t.content for t in tokens if t.type != "front_matter" and not _is_example(t))
    shown = SHOWN_EXAMPLE_CHARS if any(_is_example(t) for t in tokens) else 0
    return shown + sum(2 if east_asian_width(c) in "WF" else 1 for c in text)


def _headings(md: MarkdownIt, tokens: list) -> list[Heading]:
    """Every h2 and h3, its text rendered as on the page, less the permalink the anchors plugin
    appended (a space, then the link)."""
    found = []
    for i, t in enumerate(tokens):
        if t.type == "heading_open" and t.tag in {"h2", "h3"}:
            children = tokens[i + 1].children or []
            end = next((j for j, c in enumerate(children)
                        if c.type == "link_open" and c.attrGet("class") == "header-anchor"),
                       len(children))  # fmt: skip
            text = md.renderer.renderInline(children[:end], md.options, {}).strip()
            found.append(Heading(level=int(t.tag[1]), id=str(t.attrGet("id")), html=text))
    return found


def _check_sections(name: str, sections: list[str], meta: CardMeta, examples: int,
                    local: dict[str, str]) -> None:  # fmt: skip
    """`sections` by their English names; `local` names them in the card's own language."""

    def heading(section: str) -> str:
        return f"'## {local.get(section, section)}'"

    if not sections or sections[0] != FIRST_SECTION:
        raise CardError(f"{name}: the first section must be {heading(FIRST_SECTION)}")
    if tuple(sections[-len(CLOSING_SECTIONS) :]) != CLOSING_SECTIONS:
        wanted = ", ".join(heading(s) for s in CLOSING_SECTIONS)
        raise CardError(f"{name}: the card must end with the sections {wanted}, in that order")
    if meta.calculators and (WORKED_EXAMPLE not in sections or not examples):
        raise CardError(
            f"{name}: a card that names calculators has a {heading(WORKED_EXAMPLE)} section "
            "with at least one ```example block"
        )


def _examples_and_links(tokens: list) -> tuple[list[str], list[str]]:  # noqa: ANN001
    examples = [f"{t.info.strip()}\n{t.content}" for t in tokens if _is_example(t)]
    links = [
        str(child.attrGet("href"))
        for t in tokens
        for child in t.children or []
        if child.type == "link_open" and not str(child.attrGet("href")).startswith("#")
    ]
    return examples, links


def render_card(source: str, name: str = "<card>", lang: str = "en") -> Card:
    """Renders one card; `lang` is "en" or a key of LANGUAGES, whose section names it uses."""
    md = _markdown()
    tokens = md.parse(source)
    if not tokens or tokens[0].type != "front_matter":
        raise CardError(f"{name}: a card starts with front matter between --- lines")
    try:
        fields = load_yaml(tokens[0].content)
        meta = CardMeta.model_validate(fields)
    except (yaml.YAMLError, ValidationError) as exc:
        raise CardError(f"{name}: bad front matter: {exc}") from exc
    if lang != "en" and (inherited := [f for f in INHERITED_FIELDS if f in fields]):
        raise CardError(f"{name}: an edition takes {', '.join(inherited)} from its English card; "
                        "leave them out of its front matter")  # fmt: skip
    env: dict[str, object] = {}
    try:
        body = md.renderer.render(tokens, md.options, env)
    except ValueError as exc:
        raise CardError(f"{name}: {exc}") from exc
    positions = _h2_positions(tokens)
    sections = [title for _, title in positions]
    names = SECTION_NAMES.get(lang, {})
    local = {english: own for own, english in names.items()}
    english = [names.get(s, s) for s in sections]
    _check_sections(name, english, meta, len(env.get("examples", [])), local)
    start = positions[0][0] + 3  # past heading_open, inline, heading_close
    end = positions[1][0] if len(positions) > 1 else len(tokens)
    answer = md.renderer.render(tokens[start:end], md.options, {})
    text = source.split("---", 2)[2] if source.startswith("---") else source
    examples, links = _examples_and_links(tokens)
    figures = prose_figures(tokens, (meta.title, meta.summary))
    if meta.checked:
        _check_audit(name, meta, figures)
    return Card(
        meta=meta,
        lang=lang,
        html=body,
        has_diagram=bool(env.get("has_diagram")),
        sections=sections,
        section_ids=[h.id for h in _headings(md, tokens) if h.level == 2],
        contents=_headings(md, tokens) if _reading_length(tokens) >= LONG_CARD_CHARS else [],
        answer_html=answer,
        text=text,
        examples=examples,
        links=links,
        figures=figures,
    )


def _check_audit(name: str, meta: CardMeta, figures: dict) -> None:
    """A card that says it was checked accounts for every figure its prose states."""
    if meta.checked and meta.checked > date.today():
        raise CardError(f"{name}: checked {meta.checked} is in the future")
    problems = [] if meta.sources else ["a checked card lists its sources"]
    problems += audit_problems(figures, meta.sourced_figures(), meta.inputs, meta.derived)
    if problems:
        raise CardError(f"{name}: fact audit: " + "; ".join(problems))


LIST_ENTRY = re.compile(r"^(?:[-*+]|\d+[.)])\s+\S", re.MULTILINE)


def source_entries(text: str) -> list[str]:
    """The entries of a card's Sources section (参考文献 in Chinese), one per cited work."""
    parts = SOURCES_SECTION.split(text, maxsplit=1)
    if len(parts) < 2:
        return []
    section = re.split(r"^## ", parts[1], maxsplit=1, flags=re.MULTILINE)[0]
    return [m.group(0) for m in LIST_ENTRY.finditer(section)]


def check_edition(original: Card, edition: Card, name: str) -> None:
    """An edition is the English card in another language, not another card: the same
    sections in the same order (the fixed ones by name, through SECTION_NAMES; derivation
    sections by position), identical ```example blocks, so the calculators compute the same
    figures, the same links, and no figure the English card does not account for."""
    accounted = original.accounted_figures()
    problems = [
        f"{written} is not a figure of the English card"
        for figure, written in edition.figures.items()
        if figure not in accounted
    ]
    names = SECTION_NAMES.get(edition.lang, {})
    mapped = [names.get(s, s) for s in edition.sections]
    if len(mapped) != len(original.sections) or any(
        mine != theirs and (mine in FIXED_SECTIONS or theirs in FIXED_SECTIONS)
        for mine, theirs in zip(mapped, original.sections, strict=False)
    ):
        raise CardError(
            f"{name}: sections {edition.sections} do not line up with the English card's "
            f"{original.sections} (fixed sections use the headings {list(names)})"
        )
    if edition.examples != original.examples:
        problems.append("its ```example blocks differ from the English card's (copy them as "
                        "they are, in the same order)")  # fmt: skip
    cited, carried = len(source_entries(original.text)), len(source_entries(edition.text))
    if carried < cited:
        problems.append(
            f"its sources list {carried} works where the English card's lists {cited}: an "
            "edition cites every source its English card cites"
        )
    missing = Counter(original.links) - Counter(edition.links)
    extra = Counter(edition.links) - Counter(original.links)
    if missing or extra:
        problems.append(f"links differ from the English card's: missing {sorted(missing)}, "
                        f"extra {sorted(extra)}")  # fmt: skip
    if problems:
        raise CardError(f"{name}: " + "; ".join(problems))


def _ordered(cards: Iterable[Card]) -> list[Card]:
    """Prerequisites before the cards that need them; otherwise easier first, then by title."""
    pending = sorted(cards, key=lambda c: (c.meta.difficulty, c.meta.title))
    placed: list[Card] = []
    done: set[str] = set()
    while pending:
        ready = [c for c in pending if all(p in done or p not in {x.meta.id for x in pending}
                                           for p in c.meta.prerequisites)]  # fmt: skip
        if not ready:
            cycle = ", ".join(c.meta.id for c in pending)
            raise CardError(f"prerequisites form a cycle among: {cycle}")
        card = ready[0]
        placed.append(card)
        done.add(card.meta.id)
        pending.remove(card)
    return placed


class CardLibrary:
    """Every card, in study order (prerequisites first), with full-text search."""

    def __init__(self, cards: list[Card], editions: Iterable[Card] = ()) -> None:
        self._cards = _ordered(cards)
        self._by_id = {c.meta.id: c for c in self._cards}
        self._editions: dict[tuple[str, str], Card] = {}
        for edition in editions:
            name = f"{LANGUAGES[edition.lang]}/{edition.meta.id}.md"
            original = self._by_id.get(edition.meta.id)
            if original is None:
                raise CardError(f"{name}: no English card {edition.meta.id!r} to translate")
            check_edition(original, edition, name)
            own = {"title": edition.meta.title, "summary": edition.meta.summary}
            inherited = edition.model_copy(update={"meta": original.meta.model_copy(update=own)})
            self._editions[edition.lang, edition.meta.id] = inherited
        missing = [
            f"{c.meta.id}: prerequisite {p!r} is not a card"
            for c in self._cards
            for p in c.meta.prerequisites
            if p not in self._by_id
        ]
        for card in self._cards:
            texts = [card.meta.title, card.meta.summary, card.text]
            texts += [e.text for lang in LANGUAGES
                      if (e := self._editions.get((lang, card.meta.id)))]  # fmt: skip
            if names := undated(card.meta, texts):
                missing.append(
                    f"{card.meta.id}: names {', '.join(names)} but cites no source with "
                    "`framework:` and `version:` for it (app/cards/frameworks.py)"
                )
        if missing:
            raise CardError("; ".join(missing))

    @classmethod
    def load(cls, cards_dir: Path) -> CardLibrary:
        """The English cards in cards_dir, and their editions in cards_dir/<LANGUAGES folder>."""
        files = sorted(cards_dir.glob("*.md"))
        for folder in LANGUAGES.values():
            files += sorted((cards_dir / folder).glob("*.md"))
        signature = tuple(
            (str(p.relative_to(cards_dir)), p.stat().st_mtime_ns, p.stat().st_size) for p in files
        )
        return _load(cards_dir, signature)

    def get(self, card_id: str) -> Card | None:
        return self._by_id.get(card_id)

    def all(self) -> list[Card]:
        return list(self._cards)

    def edition(self, card_id: str, lang: str) -> Card | None:
        """The card in `lang` ("en" or a key of LANGUAGES), if that edition is written."""
        if lang == "en":
            return self.get(card_id)
        return self._editions.get((lang, card_id))

    def shown_in(self, card_id: str, lang: str) -> Card | None:
        """The card as a reader of `lang` sees it: that edition where it is written, else the
        English card (None: no such card)."""
        return self.edition(card_id, lang) or self.get(card_id)

    def editions(self, lang: str) -> list[Card]:
        """The cards written in `lang`, in study order."""
        return [e for c in self._cards if (e := self.edition(c.meta.id, lang))]

    def in_language(self, lang: str) -> list[Card]:
        """Every card, in study order, in `lang` where that edition is written, else in English."""
        return [self.edition(c.meta.id, lang) or c for c in self._cards]

    def __contains__(self, card_id: object) -> bool:
        return card_id in self._by_id

    def tags(self) -> list[str]:
        return sorted({t for c in self._cards for t in c.meta.tags})

    def link_problems(self, calculators: Iterable[str], demos: Iterable[str]) -> list[str]:
        """Every related calculator and demo a card names that does not exist."""
        known = {"calculator": set(calculators), "demo": set(demos)}
        problems = []
        for c in self._cards:
            for kind, names in (("calculator", c.meta.calculators), ("demo", c.meta.demos)):
                problems += [f"{c.meta.id}: no {kind} {n!r}" for n in names if n not in known[kind]]
        return problems


@lru_cache(maxsize=4)
def _load(cards_dir: Path, signature: tuple) -> CardLibrary:  # noqa: ARG001 - the cache key
    # Rendering runs every calculator in every worked example: do it once per set of files.
    def read(path: Path, name: str, lang: str) -> Card:
        with language(lang):  # worked examples are calculator fragments, in the card's language
            card = render_card(path.read_text(encoding="utf-8"), name, lang)
        if card.meta.id != path.stem:
            raise CardError(f"{name}: id {card.meta.id!r} must match the file name")
        return card

    cards = [read(path, path.name, "en") for path in sorted(cards_dir.glob("*.md"))]
    editions = [
        read(path, f"{folder}/{path.name}", lang)
        for lang, folder in LANGUAGES.items()
        for path in sorted((cards_dir / folder).glob("*.md"))
    ]
    return CardLibrary(cards, editions)
