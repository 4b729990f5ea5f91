"""What a card is: its front matter (validated) and its rendered body."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from app.cards.audit import to_figure

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=80)]

# The sections every card has, in this order: the answer to say aloud comes first, and the
# card ends with what interviewers push on and where the facts come from.
FIRST_SECTION = "In 30 seconds"
WORKED_EXAMPLE = "Worked example"
CLOSING_SECTIONS = ("Common mistakes", "Follow-up questions", "Sources")

# Editions in other languages live in content/cards/<lang>/<id>.md; LANGUAGES maps the ?lang=
# value to that folder. A Chinese edition names the fixed sections with these headings (its
# own derivation sections are free, like the English card's), so the loader can line its
# sections up with the English card's one for one.
LANGUAGES = {"zh": "zh-CN"}
ZH_SECTIONS = {
    "30 秒回答": FIRST_SECTION,
    "计算实例": WORKED_EXAMPLE,
    "常见误区": "Common mistakes",
    "面试追问": "Follow-up questions",
    "参考文献": "Sources",
}


# A number as the card or its front matter writes it: 1120, 1.5, "1,120", "7.5e9".
Figure = Annotated[Decimal, BeforeValidator(to_figure)]
Text = Annotated[str, StringConstraints(min_length=3)]


# The frameworks whose behaviour cards describe, and how prose names each (app/cards/frameworks.py
# holds a card to them): behaviour changes from release to release, so a source that reads one
# in its code says which framework (`framework`) and at which release or commit (`version`).
Framework = Literal[
    "megatron-core", "deepspeed", "pytorch", "nccl", "transformer-engine", "vllm", "sglang",
    "torchtitan", "torchft", "deepep",
]  # fmt: skip


class Source(BaseModel):
    """A work a card relies on, the place in it, and the figures the card takes from there."""

    model_config = ConfigDict(extra="forbid")

    cite: Text  # authors, title, venue; or the project and its documentation
    at: Text  # the place in it: section, table, equation, file:line or URL
    figures: list[Figure] = Field(default_factory=list)
    framework: Framework | None = None  # set when the source is a framework's code or docs
    # The release or commit that code was read at and when: "main@d98e8a64 (2026-08-22)".
    version: Annotated[str, StringConstraints(min_length=5, max_length=120)] | None = None

    @model_validator(mode="after")
    def _dated(self) -> Source:
        if self.framework and not self.version:
            raise ValueError(f"the {self.framework} source says no version it was read at")
        if self.version and not self.framework:
            raise ValueError("a version belongs to a framework's source: name the framework")
        return self


class CardMeta(BaseModel):
    """A card's front matter: the contract every content/cards/*.md file must meet."""

    model_config = ConfigDict(extra="forbid")

    id: Slug
    title: Annotated[str, StringConstraints(min_length=3, max_length=160)]
    summary: str = ""
    tags: list[Slug] = Field(default_factory=list)
    difficulty: Literal[1, 2, 3] = 1  # basics, working knowledge, senior
    prerequisites: list[Slug] = Field(default_factory=list)
    calculators: list[Slug] = Field(default_factory=list)
    demos: list[Slug] = Field(default_factory=list)
    # The fact audit (app/cards/audit.py): when it was last done and what each figure rests on.
    # An edition inherits these; every English card has them (tests/cards/test_audit.py).
    checked: date | None = None
    sources: list[Source] = Field(default_factory=list)
    derived: dict[Figure, Text] = Field(default_factory=dict)  # figure: arithmetic of others
    inputs: list[Figure] = Field(default_factory=list)  # values a scenario picks, not facts

    def sourced_figures(self) -> list[Decimal]:
        return [f for s in self.sources for f in s.figures]

    @property
    def short_title(self) -> str:
        """The title up to its colon ("ZeRO stages 1, 2 and 3"; a Chinese title's "："), for
        places with room for a name only: the topic map's nodes, a demo page's card links."""
        return re.split(r":\s|：", self.title, maxsplit=1)[0]


class Heading(BaseModel):
    """A section heading of a card, for its table of contents."""

    level: Literal[2, 3]
    id: str  # the anchor the heading carries (mdit_py_plugins.anchors)
    html: str  # its text as rendered, math marked for KaTeX, without the permalink


class Card(BaseModel):
    meta: CardMeta
    lang: str = "en"  # "en" for the original, else a key of LANGUAGES
    html: str
    has_diagram: bool
    sections: list[str]  # the H2 headings, in order
    section_ids: list[str] = Field(default_factory=list)  # their anchors, in the same order
    contents: list[Heading] = Field(default_factory=list)  # a long card's h2 and h3; else []
    answer_html: str  # the "In 30 seconds" section alone, for the cheat sheet
    text: str  # the Markdown body without front matter, for search
    examples: list[str] = Field(default_factory=list)  # each ```example block, info and body
    links: list[str] = Field(default_factory=list)  # every href in the body, in-page ones aside
    figures: dict[Decimal, str] = Field(default_factory=dict)  # the prose's numbers, as written

    def accounted_figures(self) -> set[Decimal]:
        """Every figure the card accounts for: its prose's, and those its audit names (sourced,
        derived or scenario inputs). An edition or a quiz item may state no other."""
        meta = self.meta
        named = set(meta.sourced_figures()) | set(meta.inputs) | set(meta.derived)
        return set(self.figures) | named
