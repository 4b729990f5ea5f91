"""Full-text search over the cards and the quiz items: SQLite FTS5, held in memory.

Chinese has no spaces, and FTS5's unicode61 tokenizer takes a whole run of Chinese characters
for one token, so "流水线气泡" would only match a text holding exactly that run between
punctuation. The Chinese editions go into a second table whose text has every run of Chinese
characters rewritten as overlapping character bigrams (流水 水线 线气 气泡), the classic CJK
indexing of Lucene's CJKAnalyzer; a query is rewritten the same way and matched as a phrase.
Bigrams rather than FTS5's trigram tokenizer because the commonest Chinese technical words
have two characters (显存, 容错, 切分, 气泡) and trigram cannot match a query shorter than three.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from html import escape

from app.cards.models import Card
from app.cards.plain_text import markdown_text
from app.i18n import current_language, language
from app.quiz.generators import GENERATORS
from app.quiz.items import GeneratedItem, QuizItem
from app.quiz.service import fill_prompt


@dataclass(frozen=True)
class Hit:
    kind: str  # "card" or "quiz"
    id: str
    title: str
    snippet: str  # HTML-safe text with <mark> around the matched words
    card_id: str  # the card to open: itself, or the card a quiz item practises
    lang: str = "en"  # the edition shown
    card_title: str = ""  # that card's title, in the same edition where the index holds it


# CJK unified ideographs (with extension A) and the compatibility block.
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def _bigrams(run: str) -> str:
    return " ".join(run[i : i + 2] for i in range(len(run) - 1)) if len(run) > 1 else run


def han_bigrams(text: str) -> str:
    """The text with each run of Chinese characters as space-separated overlapping bigrams."""
    return HAN.sub(lambda m: f" {_bigrams(m.group())} ", text)


def query_words(query: str) -> list[str]:
    """Words only: nothing a person types becomes FTS5 query syntax."""
    return re.findall(r"\w+", query)[:12]


def bigram_match(words: list[str]) -> tuple[str, list[str]]:
    """An FTS5 query for text indexed with han_bigrams, and the parts it looks for. A run of
    Chinese becomes a phrase of its bigrams, and one character alone a prefix (it is the first
    half of some bigram, unless it ends every run it appears in); other words are quoted."""
    parts = [p for w in words for p in re.split(f"({HAN.pattern})", w) if p]
    terms = [f'"{p}"' if not HAN.match(p) else f'"{p}"*' if len(p) == 1
             else f'"{_bigrams(p)}"' for p in parts]  # fmt: skip
    return " ".join(terms), parts


# bm25 weights of the columns kind, id, card, title, tags, body. A card's title says what the
# card is about, where a long body mentions many topics in passing: with the title at 30, the
# four ZeRO cards lead "zero", ahead of cards that list ZeRO among their tags or in their text.
RANK_WEIGHTS = "0, 0, 0, 30, 3, 1"
# In Chinese a title's bigrams also stand in many titles (显存 in 推理显存), so the title weighs
# less: tests/cards/test_editions.py holds the queries these weights are set by.
RANK_WEIGHTS_ZH = "0, 0, 0, 10, 5, 1"


@dataclass(frozen=True)
class _Doc:
    """A card or quiz item in one language, as the index holds and the page shows it."""

    kind: str
    id: str
    card: str
    title: str
    text: str  # plain text (app.cards.plain_text), one line per block
    lang: str


def quiz_text(item: QuizItem, lang: str = "en") -> str:
    """A quiz item's prompt as plain text; a generated prompt with its {fields} filled from
    the first inputs it can draw, in the words of `lang`, as a learner would see it."""
    if not isinstance(item, GeneratedItem):
        return markdown_text(item.prompt)
    inputs = tuple(next(item.all_inputs()).items())
    return markdown_text(_filled_prompt(item.generator, item.prompt, inputs, lang))


@lru_cache(maxsize=1024)
def _filled_prompt(generator: str, prompt: str, inputs: tuple[tuple[str, float], ...],
                   lang: str) -> str:  # fmt: skip
    # Cached, like markdown_text: every app the tests create indexes the same bank again.
    with language(lang):
        return fill_prompt(prompt, GENERATORS[generator](dict(inputs)).prompt_fields)


def first_words(text: str, width: int = 90) -> str:
    """The start of the first line, cut at a space before `width` columns (a Chinese
    character takes two) and ended with an ellipsis where something was left out."""
    line = " ".join(text.split("\n", 1)[0].split())
    columns = 0
    for end, char in enumerate(line):
        columns += 2 if HAN.match(char) or unicodedata.east_asian_width(char) in "WF" else 1
        if columns > width:
            space = line.rfind(" ", 0, end)
            cut = line[: space if space > width // 2 else end]
            return cut.rstrip(" ,;:(（，；：") + "…"
    return line


class SearchIndex:
    def __init__(self, cards: Iterable[Card], quiz_items: Iterable[QuizItem],
                 editions: Iterable[Card] = (),
                 quiz_editions: Iterable[QuizItem] = ()) -> None:  # fmt: skip
        """`editions` and `quiz_editions`: cards and quiz items in Chinese, found by Chinese or
        English words, and shown instead of the English ones to a reader of Chinese."""
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        for table in ("docs", "docs_zh"):
            self._db.execute(
                f"CREATE VIRTUAL TABLE {table} USING fts5(kind UNINDEXED, id UNINDEXED,"
                " card UNINDEXED, title, tags, body, tokenize='porter unicode61')"
            )
        self._docs: dict[tuple[str, str, str], _Doc] = {}
        for lang, table, in_cards, in_items in (
            ("en", "docs", cards, quiz_items),
            ("zh", "docs_zh", editions, quiz_editions),
        ):
            rows = [self._add_card(card, lang) for card in in_cards]
            rows += [self._add_quiz(item, lang) for item in in_items]
            self._db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?)", rows)

    def _add_card(self, card: Card, lang: str) -> tuple[str, ...]:
        text = f"{markdown_text(card.meta.summary)}\n{markdown_text(card.text)}"
        doc = _Doc("card", card.meta.id, card.meta.id, card.meta.title, text, lang)
        self._docs[lang, "card", doc.id] = doc
        tags = " ".join(card.meta.tags)
        if lang == "zh":
            return ("card", doc.id, doc.id, han_bigrams(doc.title), tags, han_bigrams(text))
        return ("card", doc.id, doc.id, doc.title, tags, text)

    def _add_quiz(self, item: QuizItem, lang: str) -> tuple[str, ...]:
        """A quiz item is titled by its prompt's first words; its id's words (the author's
        keywords for it) are indexed as tags, so they still find it."""
        text = quiz_text(item, lang)
        doc = _Doc("quiz", item.id, item.card, first_words(text), text, lang)
        self._docs[lang, "quiz", doc.id] = doc
        keywords = item.id.replace("-", " ")
        return ("quiz", doc.id, doc.card, "", keywords, han_bigrams(text) if lang == "zh" else text)

    def search(self, query: str, limit: int = 25, lang: str | None = None) -> list[Hit]:
        """The cards found, then the quiz items, at most `limit` of each, each shown in `lang`
        (the request's language by default) where that edition is written. A query holding
        Chinese searches the Chinese editions; any other searches the English text first, then
        the Chinese editions for what the English left out (English terms inside Chinese)."""
        words = query_words(query)
        if not words:
            return []
        lang = lang or current_language()
        chinese = any(HAN.search(w) for w in words)
        match, parts = bigram_match(words)
        hits: list[Hit] = []
        for kind in ("card", "quiz"):
            english = [] if chinese else self._english(words, kind, limit)
            found = {id_ for id_, _ in english}
            zh = [id_ for id_ in self._chinese(match, kind, limit) if id_ not in found]
            of_kind = [self._hit(kind, id_, lang, snippet, parts) for id_, snippet in english]
            of_kind += [self._hit(kind, id_, "zh", None, parts) for id_ in zh]
            hits += of_kind[:limit]
        return hits

    def _hit(self, kind: str, id_: str, lang: str, snippet: str | None,
             parts: list[str]) -> Hit:  # fmt: skip
        """The hit in `lang` where written, else in English; `snippet` is the English one."""
        doc = self._docs.get((lang, kind, id_)) or self._docs["en", kind, id_]
        if doc.lang != "en" or snippet is None:
            snippet = _snippet(doc.text, parts)
        card = self._docs.get((doc.lang, "card", doc.card)) or self._docs.get(
            ("en", "card", doc.card)
        )
        card_title = card.title if card else doc.card
        return Hit(kind, id_, doc.title, snippet, doc.card, doc.lang, card_title)

    def _chinese(self, match: str, kind: str, limit: int) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM docs_zh WHERE docs_zh MATCH ? AND kind = ?"
                f" ORDER BY bm25(docs_zh, {RANK_WEIGHTS_ZH}) LIMIT ?",
                (match, kind, limit),
            ).fetchall()
        return [id_ for (id_,) in rows]

    def _english(self, words: list[str], kind: str, limit: int) -> list[tuple[str, str]]:
        match = " ".join(f'"{w}"' for w in words)
        with self._lock:
            rows = self._db.execute(
                "SELECT id, snippet(docs, 5, char(1), char(2), ' … ', 16) FROM docs"
                f" WHERE docs MATCH ? AND kind = ? ORDER BY bm25(docs, {RANK_WEIGHTS}) LIMIT ?",
                (match, kind, limit),
            ).fetchall()
        return [(id_, _marked(snippet)) for id_, snippet in rows]


def _marked(snippet: str) -> str:
    return escape(_one_line(snippet)).replace("\x01", "<mark>").replace("\x02", "</mark>")


def _one_line(text: str) -> str:
    """Blocks run on in a snippet: after a sentence's end with a space, else with a dot (a
    heading, a table cell, a diagram's labels)."""
    text = re.sub(r"(?<=[.!?:;。！？：；…])[ \t]*\n\s*", " ", text.strip())
    return " ".join(re.sub(r"\s*\n\s*", " · ", text).split())


def _part_pattern(parts: list[str]) -> re.Pattern[str]:
    """Any query part; an English one at the start of a word ("offload" marks "offloading",
    not the "all" inside "small")."""
    alternatives = [re.escape(p) if HAN.match(p) else rf"(?<![A-Za-z0-9]){re.escape(p)}"
                    for p in sorted(parts, key=len, reverse=True)]  # fmt: skip
    return re.compile(f"({'|'.join(alternatives)})", re.IGNORECASE)


def _snippet(text: str, parts: list[str], width: int = 40) -> str:
    """Text around the first place a query part occurs, with every part marked (the bigram
    table's own snippet() would show the bigrams)."""
    flat = _one_line(text)
    pattern = _part_pattern(parts)
    first = pattern.search(flat)
    start = max((first.start() if first else 0) - width, 0)
    window = flat[start : start + 3 * width]
    marked = pattern.sub("\x01\\1\x02", window)
    return (
        ("… " if start else "") + _marked(marked) + (" …" if start + 3 * width < len(flat) else "")
    )
