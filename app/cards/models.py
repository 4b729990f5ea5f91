"""What a card is: its front matter (validated) and its rendered body."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

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
    sources: list[str] = Field(default_factory=list)


class Card(BaseModel):
    meta: CardMeta
    lang: str = "en"  # "en" for the original, else a key of LANGUAGES
    html: str
    has_diagram: bool
    sections: list[str]  # the H2 headings, in order
    answer_html: str  # the "In 30 seconds" section alone, for the cheat sheet
    text: str  # the Markdown body without front matter, for search
    examples: list[str] = Field(default_factory=list)  # each ```example block, info and body
    links: list[str] = Field(default_factory=list)  # every href in the body, in-page ones aside
