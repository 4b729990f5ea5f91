"""The bilingual glossary: content/glossary.yaml, one entry per term, each naming the card that
explains it (checked at load), searchable in English and Chinese.

It is also the one list of preferred Chinese terms: a term's `zh_avoid` lists the names the
Chinese editions must not use for it (重物化, a compiler's word, for 激活重计算), and the loader
refuses an edition that uses one, or that writes "多 N 倍" (which reads as N + 1 times) where
"是…的 N 倍" is meant (edition_wording_problems).

Search is FTS5 in memory, the Chinese columns indexed as character bigrams exactly as the
cards' Chinese editions are (app/cards/search.py), so 气泡 and "bubble" both find the pipeline
bubble.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from app.cards.models import Slug
from app.cards.search import bigram_match, han_bigrams, query_words
from app.yaml_text import load_yaml

Line = Field(min_length=1, max_length=300)


class GlossaryError(ValueError):
    """A glossary file that does not meet the format, or names a card that does not exist."""


class Term(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    en: str = Field(min_length=1, max_length=80)
    zh: str = Field(min_length=1, max_length=80)
    en_definition: str = Line
    zh_definition: str = Line
    card: Slug
    # What Chinese engineers actually say, where it is not the dictionary term (often the
    # English word itself).
    zh_usage: str = ""
    # Names for the same thing the Chinese editions do not use: ambiguous, a wrong field's
    # word, or one of several synonyms the cards settled on one of.
    zh_avoid: list[str] = Field(default_factory=list)


_TERMS = TypeAdapter(list[Term])

# "多 v 倍" / "多传 1.5 倍": read as v + 1 times where v times is meant; the editions write
# "变为 v 倍" or "是 … 的 1.5 倍" (a native reader's review of five zh cards).
MORE_TIMES = re.compile(r"多[传用占花出耗]?\s*\$?[0-9A-Za-z.\\{}^]+\$?\s*倍")
# Code and math spans are not wording: a term in `inline code` or an ``` block is a name.
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def edition_wording_problems(terms: Iterable[Term], text: str) -> list[str]:
    """What a Chinese edition's text says in words the glossary does not prefer."""
    # Emphasis marks split no word: 激活*检查点* reads as 激活检查点.
    prose = CODE.sub("", text).replace("*", "")
    problems = [
        f"uses {avoid!r} where the glossary's term for {t.en!r} is {t.zh!r}"
        for t in terms
        for avoid in t.zh_avoid
        if avoid in prose
    ]
    problems += [
        f"writes {m.group(0)!r}: 多 N 倍 reads as N + 1 times; write 变为 N 倍 or 是…的 N 倍"
        for m in MORE_TIMES.finditer(prose)
    ]
    return problems


class Glossary:
    def __init__(self, terms: list[Term]) -> None:
        self.terms = sorted(terms, key=lambda t: t.en.lower())
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE terms USING fts5(i UNINDEXED, en, zh, en_definition,"
            " zh_definition, tokenize='porter unicode61')"
        )
        rows = [(i, t.en, han_bigrams(f"{t.zh} {t.zh_usage}"), t.en_definition,
                 han_bigrams(t.zh_definition)) for i, t in enumerate(self.terms)]  # fmt: skip
        self._db.executemany("INSERT INTO terms VALUES (?, ?, ?, ?, ?)", rows)

    @classmethod
    def load(
        cls, path: Path, card_ids: Iterable[str], editions: Iterable[tuple[str, str]] = ()
    ) -> Glossary:
        """The glossary at `path` (none there: an empty one); every term's card must exist, and
        every Chinese text in `editions` ((name, text) pairs) keeps to its preferred terms."""
        if not path.exists():
            return cls([])
        try:
            terms = _TERMS.validate_python(load_yaml(path.read_text(encoding="utf-8")) or [])
        except (yaml.YAMLError, ValidationError, TypeError) as exc:
            raise GlossaryError(f"{path.name}: {exc}") from exc
        known = set(card_ids)
        problems = [f"{path.name}: term {t.en!r} names no card {t.card!r}"
                    for t in terms if t.card not in known]  # fmt: skip
        seen: set[str] = set()
        for t in terms:
            if t.en.lower() in seen:
                problems.append(f"{path.name}: term {t.en!r} is listed twice")
            seen.add(t.en.lower())
            problems += [f"{path.name}: term {t.en!r} avoids its own name {t.zh!r}"
                         for avoid in t.zh_avoid if avoid in t.zh]  # fmt: skip
        for name, text in editions:
            problems += [f"{name}: {p}" for p in edition_wording_problems(terms, text)]
        if problems:
            raise GlossaryError("; ".join(problems))
        return cls(terms)

    def search(self, query: str) -> list[Term]:
        """Terms matching every word of the query, English or Chinese; the term itself weighs
        more than its definition."""
        words = query_words(query)
        if not words:
            return list(self.terms)
        match, _ = bigram_match(words)
        with self._lock:
            rows = self._db.execute(
                "SELECT i FROM terms WHERE terms MATCH ? ORDER BY bm25(terms, 0, 10, 10, 1, 1)",
                (match,),
            ).fetchall()
        return [self.terms[i] for (i,) in rows]
