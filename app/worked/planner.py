"""The planner's chosen layout, term by term: the name of each term of its step time and of its
memory per GPU, the card that explains each and the calculator that computes it. The planner's
page and the cards' planner examples name the terms alike.

Every number comes from app.calc.planner; this module names, orders and shares them out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.i18n import N_

STEP_LABELS = {
    "compute": N_("Compute"),
    "memory_bound": N_("Memory-bound kernels"),
    "recompute": N_("Recompute"),
    "exposed_tp": N_("Exposed TP communication"),
    "exposed_cp_ep": N_("Exposed CP / EP communication"),
    "exposed_pp": N_("Exposed PP sends"),
    "exposed_dp": N_("Exposed DP communication"),
    "bubble": N_("Pipeline bubble"),
    "fixed": N_("Fixed costs (kernel launches, per micro-batch, per step)"),
}
MEMORY_LABELS = {
    "model_states": N_("Model states (weights, gradients, optimizer)"),
    "activations": N_("Activations"),
    "loss": N_("Loss temporaries over the fp32 logits"),
    "other": N_("Other (buffers, CUDA context, NCCL)"),
    "allocator": N_("Reserved by the caching allocator"),
}
# The card that explains each term (content/cards/<id>.md).
TERM_CARDS = {
    "compute": "training-time-mfu",
    "memory_bound": "roofline",
    "fixed": "training-time-mfu",
    "recompute": "activation-checkpointing",
    "exposed_tp": "tensor-parallel",
    "exposed_cp_ep": "context-parallel",
    "exposed_pp": "3d-parallelism",
    "exposed_dp": "compute-comm-overlap",
    "bubble": "pipeline-bubble",
    "model_states": "zero-stages",
    "activations": "zero-and-activations",
    "loss": "memory-anatomy",
    "other": "memory-anatomy",
    "allocator": "memory-anatomy",
}
# The calculator that computes each term: "training", "pipeline", "communication", "compute".
TERM_CALCULATORS = {
    "compute": "compute",
    "memory_bound": "compute",
    "fixed": "compute",
    "recompute": "compute",
    "exposed_tp": "communication",
    "exposed_cp_ep": "communication",
    "exposed_pp": "communication",
    "exposed_dp": "communication",
    "bubble": "pipeline",
    "model_states": "training",
    "activations": "training",
    "loss": "training",
    "other": "training",
    "allocator": "training",
}
CALCULATOR_NAMES = {
    "training": N_("training-memory calculator"),
    "pipeline": N_("pipeline calculator"),
    "communication": N_("communication calculator"),
    "compute": N_("compute calculator"),
}


@dataclass(frozen=True)
class Term:
    key: str
    label: str
    value: float  # seconds or bytes
    text: str
    share: float  # of the step time or of the memory per GPU
    x_percent: float
    color: int
    card: str
    calculator: str  # its page's name, in words
    url: str | None  # the calculator's page with this layout's numbers; None: out of its bounds


def planner_terms(
    labels: dict[str, str],
    values: dict[str, float],
    fmt: Callable[[float], str],
    urls: dict[str, str | None],
) -> list[Term]:
    """One Term per label, in the labels' order: its value written by `fmt`, its share of
    the whole and where it starts on the stacked bar, its card, and its calculator's page
    (`urls`, by calculator: the page with the chosen layout's numbers)."""
    total = sum(values.values()) or 1.0
    terms, x = [], 0.0
    for index, (key, label) in enumerate(labels.items()):
        share = values[key] / total
        calculator = TERM_CALCULATORS[key]
        terms.append(
            Term(key, label, values[key], fmt(values[key]), share, 100 * x, index % 8,
                 TERM_CARDS[key], CALCULATOR_NAMES[calculator], urls[calculator]),
        )  # fmt: skip
        x += share
    return terms
