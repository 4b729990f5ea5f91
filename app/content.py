"""Everything the app reads from the content folder (content/): the cards, the question bank,
the design rounds, the glossary and the search index over them, loaded and checked together.

Loaded once per set of files (their names, sizes and times): an app made again in the same
process over unchanged files (the tests make some thousand) gets the same objects, which are
only read once loaded. Changed files are a new set, loaded anew, as CardLibrary.load does for
the cards alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from app.cards.glossary import Glossary
from app.cards.search import SearchIndex
from app.cards.service import CardError, CardLibrary
from app.quiz.bank import QuestionBank
from app.quiz.design_rounds import DesignRounds


@dataclass(frozen=True)
class Content:
    cards: CardLibrary
    quiz: QuestionBank
    design_rounds: DesignRounds
    glossary: Glossary
    search: SearchIndex


def load_content(
    content_dir: Path, calculators: tuple[str, ...], demos: tuple[str, ...]
) -> Content:
    """The content in `content_dir`; CardError (or BankError) naming every broken link where a
    card names a calculator or demo not in `calculators` or `demos`, or a question a card or
    section that does not exist."""
    files = sorted(p for p in content_dir.rglob("*") if p.is_file())
    stats = [(p, p.stat()) for p in files]
    signature = tuple(
        (str(p.relative_to(content_dir)), stat.st_mtime_ns, stat.st_size) for p, stat in stats
    )
    return _kept(content_dir, signature, calculators, demos)


@lru_cache(maxsize=4)
def _kept(
    content_dir: Path,
    signature: tuple,  # noqa: ARG001 - the cache key
    calculators: tuple[str, ...],
    demos: tuple[str, ...],
) -> Content:
    return read_content(content_dir, calculators, demos)


def read_content(
    content_dir: Path, calculators: tuple[str, ...], demos: tuple[str, ...]
) -> Content:
    """load_content's work, done anew (the cards themselves are still kept per set of files:
    CardLibrary.load)."""
    cards = CardLibrary.load(content_dir / "cards")
    quiz = QuestionBank.load(content_dir / "quiz")
    card_ids = [c.meta.id for c in cards.all()]
    design_rounds = DesignRounds.load(content_dir / "design", card_ids)
    problems = cards.link_problems(calculators, demos)
    problems += quiz.card_problems(card_ids)
    problems += quiz.section_problems({c.meta.id: c.section_ids for c in cards.all()})
    if problems:
        raise CardError("; ".join(problems))
    quiz.set_card_difficulties({c.meta.id: c.meta.difficulty for c in cards.all()})
    # The Chinese cards and questions keep to the glossary's preferred terms.
    chinese = [(f"cards/zh-CN/{c.meta.id}.md", f"{c.meta.title}\n{c.meta.summary}\n{c.text}")
               for c in cards.editions("zh")]  # fmt: skip
    zh_quiz = sorted((content_dir / "quiz" / "zh-CN").glob("*.yaml"))
    zh_quiz.append(content_dir / "quiz" / "labels" / "zh-CN.yaml")
    chinese += [(f"quiz/{p.parent.name}/{p.name}", p.read_text(encoding="utf-8"))
                for p in zh_quiz if p.exists()]  # fmt: skip
    glossary = Glossary.load(content_dir / "glossary.yaml", card_ids, chinese)
    search = SearchIndex(cards.all(), quiz.all(), cards.editions("zh"), quiz.translated("zh"))
    return Content(cards, quiz, design_rounds, glossary, search)
