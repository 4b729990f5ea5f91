"""Every generated item in the bank, drawn on every combination of its choices, gives an answer."""

from __future__ import annotations

import math
import re

import pytest

from app.quiz.generators import GENERATORS
from tests.quiz.generated_items import all_inputs, generated_items


@pytest.mark.parametrize("item", generated_items(), ids=lambda item: item["id"])
def test_every_generated_item_is_answerable_across_its_choices(item: dict) -> None:
    generator = GENERATORS[item["generator"]]
    for inputs in all_inputs(item):
        solution = generator(inputs)
        assert math.isfinite(solution.answer) and solution.answer > 0, (item["id"], inputs)
        if item["generator"].startswith("compute.") and item["unit"] == "%":
            # MFU and HFU are shares of the peak; a bubble over the ideal time may pass 100 %.
            assert solution.answer <= 100, (item["id"], inputs)
        prompt = item["prompt"].format(**solution.prompt_fields)  # every placeholder is filled
        prose = re.sub(r"\$[^$]*\$", "", prompt)  # braces inside $...$ are LaTeX's
        assert "{" not in prose and len(solution.steps_latex) >= 2, (item["id"], inputs)
