"""What a card is: its front matter (validated) and its rendered body."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=80)]


class CardMeta(BaseModel):
    """A card's front matter: the contract every content/cards/*.md file must meet."""

    model_config = ConfigDict(extra="forbid")

    id: Slug
    title: Annotated[str, StringConstraints(min_length=3, max_length=160)]
    summary: str = ""
    tags: list[Slug] = Field(default_factory=list)
    calculators: list[Slug] = Field(default_factory=list)
    demos: list[Slug] = Field(default_factory=list)


class Card(BaseModel):
    meta: CardMeta
    html: str
    has_diagram: bool
