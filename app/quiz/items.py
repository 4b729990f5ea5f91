"""The format of a quiz item: the shape of each `kind`, as content/quiz/*.yaml writes it.

Both loaders build on these types: app/quiz/bank.py reads the English files into them, and
app/quiz/editions.py puts a translation's words into the English items. `BankError` is what
either raises for a file that does not fit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Annotated, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.cards.audit import half_unit, to_figure
from app.cards.models import Slug
from app.i18n import N_

Markdown = Annotated[str, Field(min_length=1)]
# The units of numeric and generated items that are words, marked for translation: the question
# and its result say them in the reader's language (the templates' |t); a symbol (GB, s, %)
# reads the same in every language. tests/quiz/test_bank.py keeps the list complete.
UNIT_WORDS = (
    N_("GPU-hours"),
    N_("billion parameters"),
    N_("bytes"),
    N_("days"),
    N_("interruptions"),
    N_("layout"),
    N_("micro-batches"),
    N_("restarts"),
    N_("tokens"),
)


class BankError(ValueError):
    """A quiz file that does not meet the format; names the file and what is wrong."""


# How senior a question is, as interview loops grade candidates. An item without a `level`
# takes its card's (difficulty 1, 2, 3); QuestionBank.level_of says which applies.
Level = Literal["junior", "mid", "senior"]
LEVELS: tuple[Level, ...] = ("junior", "mid", "senior")
LEVEL_LABELS = {"junior": N_("junior"), "mid": N_("mid-level"), "senior": N_("senior")}


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Slug
    card: Slug
    prompt: Markdown
    level: Level | None = None


class ChoiceOption(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: Markdown
    correct: bool
    explanation: Markdown


class SingleChoiceItem(_Item):
    kind: Literal["single"]
    # What the question page calls the kind (the templates' |t says it in the reader's language).
    kind_label: ClassVar[str] = N_("single choice")
    options: Annotated[list[ChoiceOption], Field(min_length=2, max_length=8)]
    explanation: str = ""

    @model_validator(mode="after")
    def _exactly_one_correct(self) -> Self:
        if sum(o.correct for o in self.options) != 1:
            raise ValueError("a single-choice item has exactly one correct option")
        return self


class MultipleChoiceItem(_Item):
    kind: Literal["multiple"]
    kind_label: ClassVar[str] = N_("multiple choice")
    options: Annotated[list[ChoiceOption], Field(min_length=2, max_length=8)]
    explanation: str = ""

    @model_validator(mode="after")
    def _at_least_one_correct(self) -> Self:
        if not any(o.correct for o in self.options):
            raise ValueError("a multiple-choice item has at least one correct option")
        return self


class NumericItem(_Item):
    """A published figure: the answer is typed in, the solution says where it comes from.

    The tolerance follows the precision the source prints: `answer: 46.2` accepts 46.15 to
    46.25, and `answer: 30` (an integer) 25 to 35. An item may accept more, never less, and
    says why in `wider_because` (a learner who quotes the source is never marked wrong).
    """

    kind: Literal["numeric"]
    kind_label: ClassVar[str] = N_("numeric")
    answer: float
    printed: str = ""  # the answer as the source prints it; taken from `answer` as written
    source: Markdown  # the work and the place in it (section, table, line) that prints it
    unit: str
    relative_tolerance: Annotated[float, Field(gt=0, lt=0.5)] | None = None
    absolute_tolerance: Annotated[float, Field(gt=0)] | None = None
    wider_because: str = ""
    solution: Markdown

    @model_validator(mode="before")
    @classmethod
    def _as_printed(cls, data: object) -> object:
        if isinstance(data, dict) and "answer" in data and not data.get("printed"):
            answer = data["answer"]
            printed = repr(answer) if isinstance(answer, float) else str(answer)
            data = {**data, "printed": printed, "answer": float(to_figure(answer))}
        return data

    @model_validator(mode="after")
    def _tolerance_follows_the_source(self) -> Self:
        if self.relative_tolerance is not None and self.absolute_tolerance is not None:
            raise ValueError("give at most one of relative_tolerance and absolute_tolerance")
        precision = float(half_unit(to_figure(self.printed)))
        given = (self.absolute_tolerance if self.relative_tolerance is None
                 else self.relative_tolerance * abs(self.answer))  # fmt: skip
        if given is None:
            object.__setattr__(self, "absolute_tolerance", precision)
        elif given < precision * (1 - 1e-9):
            raise ValueError(
                f"tolerance {given:g} is tighter than the source prints {self.printed} "
                f"(±{precision:g}): leave the tolerance out, or widen it"
            )
        elif given > precision * (1 + 1e-9) and not self.wider_because.strip():
            raise ValueError(f"tolerance {given:g} is wider than the source's ±{precision:g}: "
                             "say why in wider_because")  # fmt: skip
        return self


class GeneratedItem(_Item):
    """A numeric question whose inputs are drawn from `choices` and answered by a calculator."""

    kind: Literal["generated"]
    kind_label: ClassVar[str] = N_("generated")
    generator: str
    unit: str
    relative_tolerance: Annotated[float, Field(gt=0, lt=0.5)]
    choices: dict[str, Annotated[list[float | int], Field(min_length=1)]]

    def all_inputs(self) -> Iterator[dict[str, float | int]]:
        """Every combination of the choices (the cartesian product)."""
        names = list(self.choices)
        for values in itertools.product(*(self.choices[n] for n in names)):
            yield dict(zip(names, values, strict=True))


class FlashcardItem(_Item):
    """Free recall: the learner answers in their head, reveals `back`, and rates themselves."""

    kind: Literal["flashcard"]
    kind_label: ClassVar[str] = N_("flashcard")
    back: Markdown


# A term the answer should use; " | " separates its spellings ("micro-batch | micro-batches").
KeyTerm = Annotated[str, Field(min_length=1, max_length=80)]


class RubricPoint(BaseModel):
    """One thing an interviewer listens for in a spoken or typed answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    point: Markdown
    weight: Annotated[int, Field(ge=1, le=3)] = 1
    # The anchor of the card's H2 section that teaches it ("in-30-seconds"); the loader checks
    # it against the card, and a Chinese page links the Chinese card's section in that place.
    section: Slug


class NumberCheck(BaseModel):
    """A figure the answer should state, computed by a calculator (a generator of
    app/quiz/generators) from fixed inputs; an answer states it when any number it writes,
    in a unit of the same kind, is within `relative_tolerance` of the calculator's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    generator: str
    inputs: dict[str, float | int]
    unit: str
    relative_tolerance: Annotated[float, Field(gt=0, lt=0.5)] = 0.1
    label: Markdown  # what the figure is: "model states per GPU"

    def changed(self, change: dict[str, float | int]) -> NumberCheck:
        return self.model_copy(
            update={
                "inputs": {**self.inputs, **{k: v for k, v in change.items() if k in self.inputs}}
            }
        )


class _Spoken(BaseModel):
    """What an opener and its follow-ups both have: the model answer, the rubric, the time
    limit and the checks that need no judgement, and the figures the audit accounts for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_answer: Markdown
    rubric: Annotated[list[RubricPoint], Field(min_length=2, max_length=8)]
    minutes: Annotated[int, Field(ge=1, le=15)] = 3
    key_terms: list[KeyTerm] = Field(default_factory=list)
    numbers: list[NumberCheck] = Field(default_factory=list)
    inputs: list[float | int | str] = Field(default_factory=list)
    # Figures computed from others, as a card's `derived` ({280: "4 * 70"}): the audit
    # evaluates each and needs its operands accounted for.
    derived: dict[float | int | str, str] = Field(default_factory=dict)
    follow_ups: list[FollowUp] = Field(default_factory=list)


class FollowUp(_Spoken):
    """A follow-up question, graded and scheduled as an item of its own that `follows` its
    opener. One that changes a condition ("now with ZeRO-1") names it in `change`: the
    opener's number checks are asked again with it, so their figures are the calculator's for
    the new case. One that asks about something else has only its own `numbers`, if any."""

    id: Slug
    prompt: Markdown
    level: Level | None = None
    change: dict[str, float | int] = Field(default_factory=dict)


_Spoken.model_rebuild()


class FreeResponseItem(_Item, _Spoken):
    """An interview question answered aloud or in writing: the learner's answer beside a model
    answer, scored against a rubric the learner ticks plus the checks that need no judgement
    (key terms present, figures within tolerance of the calculator). Its figures are audited
    as a card's: its card's, the values its scenario picks (`inputs`: a 70 B model), those it
    `derived`, and what its number checks compute."""

    kind: Literal["free"]
    kind_label: ClassVar[str] = N_("free response")
    follows: Slug | None = None  # set by the bank on a follow-up: its opener's id

    @property
    def total_weight(self) -> int:
        return sum(p.weight for p in self.rubric)

    def flattened(self) -> list[FreeResponseItem]:
        """This item, then each follow-up (and theirs) as an item that follows its opener."""
        items = [self.model_copy(update={"follow_ups": []})]
        for follow in self.follow_ups:
            # A follow-up that changes a condition asks the opener's figures again, as they
            # are now; one that asks about something else brings its own, if any.
            inherited = [n.changed(follow.change) for n in self.numbers] if follow.change else []
            numbers = inherited + follow.numbers
            unknown = set(follow.change) - {k for n in self.numbers for k in n.inputs}
            if unknown:
                raise ValueError(f"follow-up {follow.id}: change {sorted(unknown)} is not an "
                                 f"input of {self.id}'s number checks")  # fmt: skip
            child = FreeResponseItem(
                id=follow.id, card=self.card, kind="free", prompt=follow.prompt,
                level=follow.level or self.level, model_answer=follow.model_answer,
                rubric=follow.rubric, minutes=follow.minutes, key_terms=follow.key_terms,
                numbers=numbers, inputs=[*self.inputs, *follow.inputs],
                derived={**self.derived, **follow.derived},
                follow_ups=follow.follow_ups, follows=self.id,
            )  # fmt: skip
            items += child.flattened()
        return items


QuizItem = Annotated[
    SingleChoiceItem
    | MultipleChoiceItem
    | NumericItem
    | GeneratedItem
    | FlashcardItem
    | FreeResponseItem,
    Field(discriminator="kind"),
]
# Kinds graded against a right answer (a flashcard is rated by the learner).
GRADED_KINDS = frozenset({"single", "multiple", "numeric", "generated"})
# What a mock interview asks: the graded kinds and free responses (scored by their rubric).
INTERVIEW_KINDS = GRADED_KINDS | {"free"}
