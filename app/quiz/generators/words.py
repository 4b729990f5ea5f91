"""Names from app.calc as a prompt says them, in the language of the request drawing the question.

app.calc stays free of translation, so the names it holds (ZeRO stages, optimizers, links,
schedules, dtypes) are looked up with gettext when a generator runs (marked for extraction
in app/calculators/labels.py, or here with N_ where that list has no such name),
which is inside the request (app.i18n reads its language; outside a request it is English).
In English every table equals the calculator's own names (tests/quiz/test_generated_chinese.py),
so an English prompt is what it was. A name with no words to translate (ZeRO-1 (P_os), 1F1B
(PipeDream-Flush), NVLink 4 (H100 SXM)) is the calculator's as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.calc.hardware import DTYPE_LABELS
from app.calc.links import LINKS, Link
from app.calc.memory import ZERO_STAGE_NAMES
from app.calc.pipeline import SCHEDULE_NAMES
from app.calc.precision import OPTIMIZERS
from app.formatting import count_short
from app.i18n import N_, gettext

# app/calculators/labels.py marks every name app.calc defines for extraction (a test keeps it
# complete), so these tables are the calculator's own; gettext finds their translations.
ZERO_STAGE_WORDS: dict[int, str] = ZERO_STAGE_NAMES
OPTIMIZER_WORDS: dict[str, str] = OPTIMIZERS
DTYPE_WORDS: dict[str, str] = DTYPE_LABELS
SCHEDULE_WORDS: dict[str, str] = SCHEDULE_NAMES
# Link names are not among those labels: the ones with words to translate are marked here.
LINK_WORDS: dict[str, str] = {
    **{slug: link.name for slug, link in LINKS.items()},
    "ib-ndr": N_("InfiniBand NDR 400 Gb/s (1 NIC per GPU)"),
    "ib-hdr": N_("InfiniBand HDR 200 Gb/s (1 NIC per GPU)"),
    "roce-400g": N_("RoCE 400GbE (1 NIC per GPU)"),
}
# A strategy inside a sentence ("… of tensor parallel traffic"): the label in lower case.
STRATEGY_WORDS: dict[str, str] = {
    "dp": N_("data parallel"),
    "tp": N_("tensor parallel"),
    "pp": N_("pipeline parallel"),
    "ep": N_("expert parallel"),
    "cp": N_("context parallel"),
}
RECOMPUTE_WORDS: dict[str, str] = {
    "none": N_("no recompute"),
    "selective": N_("selective recompute"),
    "full": N_("full recompute"),
}


def say(table: Mapping[Any, str], key: object) -> str:
    """table[key] in the request's language (a name nobody marked comes back as it is)."""
    return gettext(table[key])


def link_name(link: Link) -> str:
    return gettext(LINK_WORDS.get(link.slug, link.name))


def parameters(count: float) -> str:
    """'8.03 B parameters' (a model's size after its name)."""
    return gettext("{count} parameters").format(count=count_short(count))
