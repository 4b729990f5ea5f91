"""Full-text search over the cards and the quiz items: SQLite FTS5, held in memory."""

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


class SearchIndex:
    def __init__(self, cards: Iterable[Card], quiz_items: Iterable[QuizItem]) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(kind UNINDEXED, id UNINDEXED,"
            " card UNINDEXED, title, tags, body, tokenize='porter unicode61')"
        )
        rows = [("card", c.meta.id, c.meta.id, c.meta.title, " ".join(c.meta.tags),
                 f"{c.meta.summary}\n{c.text}") for c in cards]  # fmt: skip
        rows += [("quiz", q.id, q.card, q.id.replace("-", " "), "", q.prompt) for q in quiz_items]
        self._db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?)", rows)

    def search(self, query: str, limit: int = 25) -> list[Hit]:
        # Words only, each quoted: nothing a person types becomes FTS5 query syntax.
        words = re.findall(r"\w+", query)
        if not words:
            return []
        match = " ".join(f'"{w}"' for w in words[:12])
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
