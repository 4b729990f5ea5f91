"""What a generator returns: the answer, how the inputs read in the prompt, the worked steps."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Solution:
    answer: float  # in the item's unit
    prompt_fields: dict[str, str]  # how the inputs read inside the prompt
    steps_latex: list[str]  # the formula, then the numbers substituted
    # A question that picks one of several options (the answer is its number, from 1): what
    # each option is called on the form, and why each is or is not the answer (Markdown).
    options: tuple[str, ...] = ()
    option_notes: tuple[str, ...] = ()
