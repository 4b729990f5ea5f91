"""The syllabus: every card once, in levels, in the order a learner should meet them.

Each step is one card, then its calculator, then its demo, then a few of its questions: read
it, compute it, watch it run, recall it. Prerequisites always come before the cards that need
them (tests/journey/test_syllabus.py holds the syllabus to that and to covering every card).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

from app.cards.models import Card
from app.cards.service import CardLibrary
from app.i18n import N_

# Questions that close a step: enough to check recall without turning a step into a quiz.
STEP_QUESTIONS = 5


@dataclass(frozen=True)
class Level:
    key: str
    title: str  # N_()-marked: translated where it is shown
    cards: tuple[str, ...]


LEVELS = (
    Level("foundations", N_("Foundations"), (
        "training-compute", "memory-anatomy", "mixed-precision", "roofline",
        "training-time-mfu", "ring-all-reduce", "dp-vs-ddp", "torchrun-launch",
    )),
    Level("memory", N_("Memory"), (
        "adam-bytes-per-parameter", "activation-checkpointing", "flash-attention", "zero-stages",
        "gradient-accumulation", "zero-r", "zero-and-activations", "fsdp2",
        "zero-offload-infinity",
    )),
    Level("parallelism", N_("Parallelism"), (
        "tensor-parallel", "sequence-parallel", "context-parallel", "context-parallel-in-depth",
        "expert-parallel", "moe-load-balancing", "moe-parallel-folding",
    )),
    Level("pipelines", N_("Pipelines"), (
        "pipeline-bubble", "pipeline-stage-imbalance", "zero-bubble-schedules",
    )),
    Level("communication", N_("Communication"), (
        "comm-volume-per-layer", "compute-comm-overlap", "low-precision-communication",
        "step-time-profile", "cluster-networking-nccl",
    )),
    Level("scale", N_("Scale and failures"), (
        "scaling-walls", "fp8-training", "distributed-numerics", "muon-at-scale",
        "inference-kv-cache", "multi-head-latent-attention", "serving-parallelism",
        "rl-post-training-infra", "loss-curves", "fault-tolerance", "checkpoints-at-scale",
        "elastic-training", "data-pipeline-correctness", "faulty-nodes-and-hangs",
        "recovering-in-place",
    )),
    Level("design", N_("Design"), (
        "3d-parallelism", "deepspeed-vs-megatron", "choosing-a-parallel-layout", "common-myths",
    )),
)  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One card of the path and where its calculator, demo and questions are."""

    number: int  # 1-based, across levels
    level: Level
    card: Card
    calculator: str | None  # the card's first calculator page, if it has one
    demo: str | None  # the card's first demo, if it has one

    @property
    def card_id(self) -> str:
        return self.card.meta.id

    @property
    def practice_url(self) -> str:
        return f"/quiz?mode=practice&topic={self.card_id}"

    @property
    def visitor_practice_url(self) -> str:
        """The questions for a visitor: graded, kept nowhere (app/quiz/practice_router.py)."""
        return "/practice?" + urlencode({"topic": self.card_id, "step": self.number})


def syllabus_order() -> list[str]:
    return [card for level in LEVELS for card in level.cards]


def in_path_order(cards: Iterable[Card]) -> list[Card]:
    """The cards in the path's order, which keeps every prerequisite before the cards that
    need it (problems() checks it): how /cards, the map, the cheat sheet and a card's previous
    and next links list them. A card the path does not name follows, in the order given."""
    position = {card_id: i for i, card_id in enumerate(syllabus_order())}
    return sorted(cards, key=lambda c: position.get(c.meta.id, len(position)))


def _places() -> list[tuple[Level, str]]:
    """Every card of the path with its level, in path order."""
    return [(level, card_id) for level in LEVELS for card_id in level.cards]


def _step(library: CardLibrary, number: int, level: Level, card_id: str, lang: str) -> Step:
    card = library.shown_in(card_id, lang)
    if card is None:
        raise KeyError(f"syllabus names {card_id!r}, which is not a card")
    return Step(number, level, card, next(iter(card.meta.calculators), None),
                next(iter(card.meta.demos), None))  # fmt: skip


def steps(library: CardLibrary, lang: str = "en") -> list[Step]:
    """The path in order, each card in `lang` where its edition is written."""
    return [_step(library, n, level, card_id, lang)
            for n, (level, card_id) in enumerate(_places(), 1)]  # fmt: skip


def step_at(library: CardLibrary, number: int, lang: str = "en") -> Step | None:
    """Step `number` of the path (1-based), as steps() gives it; None outside the path."""
    places = _places()
    if not 1 <= number <= len(places):
        return None
    level, card_id = places[number - 1]
    return _step(library, number, level, card_id, lang)


def problems(library: CardLibrary) -> list[str]:
    """Why the syllabus does not fit the cards: a card missing or twice, or a card placed
    before one of its prerequisites."""
    order = syllabus_order()
    found = [f"{c} is on the syllabus twice" for c in sorted(set(order)) if order.count(c) > 1]
    known = {c.meta.id for c in library.all()}
    found += [f"{c} is not a card" for c in order if c not in known]
    found += [f"card {c} is not on the syllabus" for c in sorted(known - set(order))]
    position = {c: i for i, c in enumerate(order)}
    for card in library.all():
        for before in card.meta.prerequisites:
            if (
                before in position
                and card.meta.id in position
                and (position[before] > position[card.meta.id])
            ):
                found.append(f"{card.meta.id} comes before its prerequisite {before}")
    return found
