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
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape

from app.cards.models import Card
from app.quiz.bank import QuizItem


@dataclass(frozen=True)
class Hit:
    kind: str  # "card" or "quiz"
    id: str
    title: str
    snippet: str  # HTML-safe text with <mark> around the matched words
    card_id: str  # the card to open: itself, or the card a quiz item practises
    lang: str = "en"  # the card's edition


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


class SearchIndex:
    def __init__(self, cards: Iterable[Card], quiz_items: Iterable[QuizItem],
                 editions: Iterable[Card] = (),
                 quiz_editions: Iterable[QuizItem] = ()) -> None:  # fmt: skip
        """`editions` and `quiz_editions`: cards and quiz items in Chinese, found by Chinese or
        English words."""
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        for table in ("docs", "docs_zh"):
            self._db.execute(
                f"CREATE VIRTUAL TABLE {table} USING fts5(kind UNINDEXED, id UNINDEXED,"
                " card UNINDEXED, title, tags, body, tokenize='porter unicode61')"
            )
        rows = [("card", c.meta.id, c.meta.id, c.meta.title, " ".join(c.meta.tags),
                 f"{c.meta.summary}\n{c.text}") for c in cards]  # fmt: skip
        rows += [("quiz", q.id, q.card, q.id.replace("-", " "), "", q.prompt) for q in quiz_items]
        self._db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?)", rows)
        self._editions = {c.meta.id: c for c in editions}
        rows = [("card", c.meta.id, c.meta.id, han_bigrams(c.meta.title), " ".join(c.meta.tags),
                 han_bigrams(f"{c.meta.summary}\n{c.text}"))
                for c in self._editions.values()]  # fmt: skip
        self._quiz_editions = {q.id: q for q in quiz_editions}
        rows += [("quiz", q.id, q.card, q.id.replace("-", " "), "", han_bigrams(q.prompt))
                 for q in self._quiz_editions.values()]  # fmt: skip
        self._db.executemany("INSERT INTO docs_zh VALUES (?, ?, ?, ?, ?, ?)", rows)

    def search(self, query: str, limit: int = 25) -> list[Hit]:
        """English and Chinese hits; the Chinese ones first when the query holds Chinese."""
        words = query_words(query)
        if not words:
            return []
        chinese = [w for w in words if HAN.search(w)]
        english = [] if chinese else self._english(words, limit)
        found = {h.id for h in english if h.kind == "card"}
        zh = [h for h in self._chinese(words, limit) if h.id not in found]
        return (english + zh)[:limit]

    def _chinese(self, words: list[str], limit: int) -> list[Hit]:
        if not self._editions and not self._quiz_editions:
            return []
        match, parts = bigram_match(words)
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, id FROM docs_zh WHERE docs_zh MATCH ?"
                " ORDER BY bm25(docs_zh, 0, 0, 0, 10, 5, 1) LIMIT ?",
                (match, limit),
            ).fetchall()
        hits = []
        for kind, id_ in rows:
            if kind == "quiz":
                item = self._quiz_editions[id_]
                hits.append(Hit("quiz", id_, id_.replace("-", " "), _snippet(item.prompt, parts),
                                item.card, "zh"))  # fmt: skip
                continue
            card = self._editions[id_]
            snippet = _snippet(f"{card.meta.summary}\n{card.text}", parts)
            hits.append(Hit("card", id_, card.meta.title, snippet, id_, card.lang))
        return hits

    def _english(self, words: list[str], limit: int) -> list[Hit]:
        match = " ".join(f'"{w}"' for w in words)
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, id, card, title,"
                " snippet(docs, 5, char(1), char(2), ' … ', 16)"
                " FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 0, 0, 0, 10, 5, 1) LIMIT ?",
                (match, limit),
            ).fetchall()
        return [Hit(kind, id_, title, _marked(snippet), card) for kind, id_, card, title, snippet
                in rows]  # fmt: skip


def _marked(snippet: str) -> str:
    return escape(snippet).replace("\x01", "<mark>").replace("\x02", "</mark>")


def _snippet(text: str, parts: list[str], width: int = 40) -> str:
    """Text around the first place a query part occurs, with every part marked (the bigram
    table's own snippet() would show the bigrams)."""
    flat = " ".join(text.split())
    where = [i for p in parts if (i := flat.lower().find(p.lower())) >= 0]
    start = max(min(where, default=0) - width, 0)
    window = flat[start : start + 3 * width]
    pattern = "|".join(re.escape(p) for p in sorted(parts, key=len, reverse=True))
    marked = re.sub(f"({pattern})", "\x01\\1\x02", window, flags=re.IGNORECASE)
    return (
        ("… " if start else "") + _marked(marked) + (" …" if start + 3 * width < len(flat) else "")
    )
