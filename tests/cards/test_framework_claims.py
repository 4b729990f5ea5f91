"""Every claim about a framework's behaviour is dated: a card, its Chinese edition or one of its
questions that names Megatron-Core, DeepSpeed, PyTorch, NCCL, Transformer Engine, vLLM and the
rest cites that framework's code or docs at a release or commit (app/cards/frameworks.py).

Frameworks change what they do (Megatron-Core's MoE parallel folding lifted EP <= DP; it warns
where it once required sequence parallelism with EP and TP), so a claim without the version it
was read at cannot be re-checked and silently goes stale.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from app.cards.frameworks import named_frameworks, undated
from app.cards.models import Source
from app.cards.service import CardLibrary
from app.config import ROOT_DIR

CONTENT = ROOT_DIR / "content"
LIBRARY = CardLibrary.load(CONTENT / "cards")
CARDS = {c.meta.id: c for c in LIBRARY.all()}


def _question_texts() -> dict[str, list[str]]:
    """Each card's questions as raw text, English and Chinese (the words are what name a
    framework; ids and numbers do not)."""
    texts: dict[str, list[str]] = {}
    for folder in (CONTENT / "quiz", CONTENT / "quiz" / "zh-CN"):
        for path in sorted(folder.glob("*.yaml")):
            items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
            for item in items:
                card = item.get("card") or path.stem
                texts.setdefault(card, []).append(yaml.safe_dump(item, allow_unicode=True))
    return texts


QUESTIONS = _question_texts()


@pytest.mark.parametrize("card_id", sorted(CARDS))
def test_every_framework_a_card_names_is_cited_at_a_version(card_id: str) -> None:
    card = CARDS[card_id]
    texts = [card.meta.title, card.meta.summary, card.text, *QUESTIONS.get(card_id, [])]
    edition = LIBRARY.edition(card_id, "zh")
    if edition is not None:
        texts += [edition.meta.title, edition.meta.summary, edition.text]
    missing = undated(card.meta, texts)
    assert not missing, (
        f"{card_id} names {missing} but cites no source with `framework:` and `version:` for "
        "it: re-read the claim in that framework's code and cite the file at its commit"
    )


def test_a_framework_source_without_a_version_is_refused() -> None:
    with pytest.raises(ValueError, match="says no version"):
        Source(
            cite="Megatron-LM source",
            at="megatron/core/parallel_state.py",
            framework="megatron-core",
        )
    with pytest.raises(ValueError, match="name the framework"):
        Source(cite="A paper", at="Section 3", version="v1.0.0 (2025-01-01)")


def test_prose_names_are_found_and_the_sources_section_is_not_prose() -> None:
    text = "DeepSpeed's ZeRO-3 and FSDP2 shard parameters.\n\n## Sources\n\n- Megatron-LM paper"
    assert named_frameworks(text) == {"deepspeed", "pytorch"}
    assert named_frameworks("NCCL-tests reports bus bandwidth") == set()
    assert named_frameworks("NCCL's ring") == {"nccl"}


def test_the_cards_cite_today_s_code_for_the_claims_the_review_found_wrong() -> None:
    """The review's examples: EP is no longer carved out of DP (MoE parallel folding), and
    Megatron-Core warns, not requires, sequence parallelism with EP and TP."""
    ep = CARDS["expert-parallel"]
    assert any(s.framework == "megatron-core" for s in ep.meta.sources)
    prose = ep.text.lower()
    assert "folding" in prose
    sp = CARDS["sequence-parallel"].text.lower()
    assert "warn" in sp


def test_every_card_file_is_in_the_library() -> None:
    assert {p.stem for p in Path(CONTENT / "cards").glob("*.md")} == set(CARDS)
