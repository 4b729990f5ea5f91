"""Claims about a framework's behaviour, held to a dated reading of its code.

A framework changes what it does from release to release (Megatron-Core lifted the EP <= DP
limit with MoE parallel folding; it stopped requiring sequence parallelism with EP and TP), so
a card that names one must cite it as read at a release or commit: a source with `framework`
and `version` (app/cards/models.py). This module says which frameworks a text names; the
loader refuses a card or edition that names one its card has no dated source for, and
tests/cards/test_framework_claims.py holds the quiz items to the same.
Where the paper and today's code differ, the card says both; that is for its author to write.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.cards.models import CardMeta

# How prose names each framework: its own name, or one of its parts a card talks about.
NAMED_BY = {
    "megatron-core": re.compile(r"\bMegatron"),
    "deepspeed": re.compile(r"\bDeepSpeed\b"),
    "pytorch": re.compile(
        r"\bPyTorch\b|\bFSDP2?\b|\bDTensor\b|\btorchrun\b|torch\.distributed|\bDDP\b"
        r"|DistributedDataParallel|torch\.compile"
    ),
    "nccl": re.compile(r"\bNCCL(?!-tests)\b"),
    "transformer-engine": re.compile(r"Transformer Engine"),
    "vllm": re.compile(r"\bvLLM\b"),
    "sglang": re.compile(r"\bSGLang\b"),
    "torchtitan": re.compile(r"\b[Tt]orch[Tt]itan\b"),
    "torchft": re.compile(r"\btorchft\b"),
    "deepep": re.compile(r"\bDeepEP\b"),
}
# A card's own Sources section lists works by name; naming is not claiming there.
SOURCES_SECTION = re.compile(r"^## (?:Sources|参考文献)\s*$", re.MULTILINE)


def named_frameworks(text: str) -> set[str]:
    """The frameworks `text` names, Sources section left out."""
    prose = SOURCES_SECTION.split(text, maxsplit=1)[0]
    return {name for name, pattern in NAMED_BY.items() if pattern.search(prose)}


def dated_frameworks(meta: CardMeta) -> set[str]:
    return {s.framework for s in meta.sources if s.framework}


def undated(meta: CardMeta, texts: Iterable[str]) -> list[str]:
    """The frameworks the texts name that the card cites at no version, sorted."""
    named = set().union(*(named_frameworks(t) for t in texts))
    return sorted(named - dated_frameworks(meta))
