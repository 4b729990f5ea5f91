"""Generated questions in Chinese: the words a generator puts into a prompt's {placeholders}
are in the request's language, and in English they are what they always were.

The Chinese checks read the generators' messages from translations/zh_CN/LC_MESSAGES/
messages.po: they pass once the generators' msgids (app/quiz/generators/*.py) are merged into
the catalogue with their translations; until then a Chinese prompt still shows English words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.calc.communication_query import STRATEGY_LABELS
from app.calc.hardware import DTYPE_LABELS
from app.calc.links import LINKS
from app.calc.memory import ZERO_STAGE_NAMES
from app.calc.pipeline import SCHEDULE_NAMES
from app.calc.planner import RULES, violations
from app.calc.precision import OPTIMIZERS
from app.config import ROOT_DIR
from app.i18n import _language, language, say
from app.quiz.bank import QuestionBank
from app.quiz.generators import GENERATORS
from app.quiz.generators.layout import (
    LAYOUT_SCHEDULE_WORDS,
    RULE_WORDS,
    TERM_WORDS,
    layout_options,
    layout_words,
)
from app.quiz.generators.words import (
    DTYPE_WORDS,
    LINK_WORDS,
    OPTIMIZER_WORDS,
    RECOMPUTE_WORDS,
    SCHEDULE_WORDS,
    STRATEGY_WORDS,
    ZERO_STAGE_WORDS,
)
from app.quiz.items import GeneratedItem
from app.quiz.layouts import (
    RECOMPUTE_TEXT,
    SCENARIOS,
    SCHEDULE_TEXT,
    TERM_TEXT,
    layout_text,
    scenario_plan,
)
from app.quiz.service import question_for
from tests.quiz.generated_items import all_inputs
from tests.utils import register

BANK = QuestionBank.load(ROOT_DIR / "content" / "quiz")
CHINESE_GENERATED = [i for i in BANK.translated("zh") if isinstance(i, GeneratedItem)]

# A Latin word: letters, inner hyphens or apostrophes, no digits (H100, ZB-H1 and bf16 are
# names, not words). Three or more in a row, separated by spaces only, are an English phrase.
_WORD = r"(?<![A-Za-z0-9_'’-])[A-Za-z][A-Za-z'’-]*(?![A-Za-z0-9_'’-])"
_PHRASE = re.compile(rf"{_WORD}(?: +{_WORD}){{2,}}")
# Phrases that are names in any language.
NAMES = {"AMD Instinct", "Google TPU"}
# Lower-case words a Chinese engineer writes in English: collectives and their parts, and the
# forward and backward of the catalogue's "GPipe（先全部 forward，再全部 backward）".
TECHNICAL = {"token", "rank", "scatter", "gather", "bitsandbytes", "all-reduce", "reduce-scatter",
             "all-gather", "all-to-all", "broadcast", "forward", "backward"}  # fmt: skip


def _prose(text: str) -> str:
    """The text without formulas ($...$) and code (`...`)."""
    return re.sub(r"\$[^$]*\$|`[^`]*`", " ", text)


# English glue words: no name or term has them alone, so each one is a piece of an English phrase
# (the "with" of "with sequence parallelism", the "no" of "no overlap").
GLUE = {"a", "an", "the", "of", "per", "and", "or", "with", "without", "no", "to", "for", "in",
        "on", "each", "is", "be"}  # fmt: skip


def english_phrases(text: str) -> list[str]:
    """Runs of three English words, and English glue words on their own."""
    prose = _prose(text)
    glue = [w for w in re.findall(_WORD, prose) if w.lower() in GLUE]
    return [m for m in _PHRASE.findall(prose) if m not in NAMES] + glue


def english_words(value: str) -> list[str]:
    """The lower-case English words of a field's value (a name is capitalised or has digits)."""
    words = re.findall(_WORD, _prose(value))
    return [w for w in words if len(w) > 1 and w[0].islower() and w not in TECHNICAL]


@pytest.fixture
def chinese() -> Iterator[None]:
    """gettext in Chinese, as LanguageMiddleware sets it for a ?lang=zh request."""
    token = _language.set("zh")
    try:
        yield
    finally:
        _language.reset(token)


def _item_inputs(item: GeneratedItem) -> Iterator[dict[str, float]]:
    yield from all_inputs({"choices": item.choices})


# Passes once /tmp/po_generators.json (the generators' msgids) is merged into messages.po.
@pytest.mark.parametrize("item", CHINESE_GENERATED, ids=lambda item: item.id)
def test_a_chinese_generated_prompt_has_no_english_words(
    item: GeneratedItem, chinese: None
) -> None:
    for inputs in _item_inputs(item):
        question = question_for(item, inputs)
        assert question.solution is not None
        assert english_phrases(question.prompt) == [], (item.id, inputs, question.prompt)
        shown = {
            k: v for k, v in question.solution.prompt_fields.items() if f"{{{k}}}" in item.prompt
        }
        assert {k: english_words(v) for k, v in shown.items() if english_words(v)} == {}, (
            item.id,
            inputs,
        )


# Passes once /tmp/po_generators.json is merged into messages.po.
def test_the_layout_options_and_notes_are_in_chinese(chinese: None) -> None:
    solution = GENERATORS["layout.pick_the_layout"]({"scenario": 0, "seed": 0})
    assert solution.options == ("布局 1", "布局 2", "布局 3", "布局 4")
    frames = ("Breaks a rule", "Does not fit", "Fits but slower", "The planner's best", "per GPU")
    for note in solution.option_notes:
        assert not any(frame in note for frame in frames), note


# Passes once /tmp/po_generators.json is merged into messages.po.
def test_a_zh_request_fills_the_prompt_in_chinese(client: TestClient) -> None:
    register(client)
    form = {"item_id": "fault-tolerance-job-mtbf", "in_rate": "20000", "in_rate_kind": "0",
            "in_units": "512", "answer": "39.06"}  # fmt: skip
    page = client.post("/quiz/answer?lang=zh", data=form).text
    assert "每张 GPU 的 MTBF 为 20,000 小时" in page and "hours per GPU" not in page
    english = client.post("/quiz/answer?lang=en", data=form).text
    assert "with an MTBF of 20,000 hours per GPU" in english


def test_in_english_the_tables_are_the_calculators_names() -> None:
    assert ZERO_STAGE_WORDS == ZERO_STAGE_NAMES
    assert OPTIMIZER_WORDS == OPTIMIZERS
    assert DTYPE_WORDS == DTYPE_LABELS
    assert SCHEDULE_WORDS == SCHEDULE_NAMES
    assert LINK_WORDS == {slug: link.name for slug, link in LINKS.items()}
    assert STRATEGY_WORDS == {k: v.lower() for k, v in STRATEGY_LABELS.items()}
    assert RECOMPUTE_WORDS == RECOMPUTE_TEXT
    assert LAYOUT_SCHEDULE_WORDS == SCHEDULE_TEXT
    assert {k: TERM_TEXT[k] for k in TERM_WORDS} == TERM_WORDS
    assert RULE_WORDS == RULES


@pytest.mark.parametrize("scenario", range(len(SCENARIOS)))
def test_in_english_a_layout_reads_as_layout_text(scenario: int) -> None:
    for seed in range(8):
        for option in layout_options(scenario, seed):
            assert layout_words(option.layout) == layout_text(option.layout)


def test_the_checks_find_english_and_let_names_through() -> None:
    assert english_phrases("512 张 GPU（an MTBF of 50,000 hours per GPU）") == [
        "an MTBF of",
        "hours per GPU",
        "an",
        "of",
        "per",
    ]
    assert english_phrases("with 序列并行（sequence parallelism）") == ["with"]
    assert (
        english_phrases("NVIDIA H100 SXM (80GB)，AMD Instinct MI300X，`reshard_after_forward`")
        == []
    )
    assert english_words("DDP (no sharding)") == ["no", "sharding"]
    assert english_words("在 scatter 之前，Zero bubble ZB-H1，bf16，NVLink 4 (H100 SXM)") == [
        "bubble"
    ]


def test_a_rule_breakers_note_gives_the_planners_reason_in_chinese(client: TestClient) -> None:
    plan_ = scenario_plan(1)
    broken = next(o for o in layout_options(1, 2) if o.verdict == "breaks_rule")
    reason = violations(plan_.request, broken.layout)[0].reason
    with language("zh"):
        said = say(reason)
        note = next(o.note for o in layout_options(1, 2) if o.verdict == "breaks_rule")
    assert said != reason and said in note and reason not in note
    # Graded by the option's number, which no language changes.
    register(client)
    solution = GENERATORS["layout.pick_the_layout"]({"scenario": 1, "seed": 2})
    form = {"item_id": "layout-pick-the-one-to-launch", "in_scenario": "1", "in_seed": "2",
            "answer": str(int(solution.answer))}  # fmt: skip
    page = client.post("/quiz/answer?lang=zh", data=form).text
    assert "回答正确。" in page and said in page and reason not in page


# The words inside a worked solution's \text{...}: in Chinese, each is said in Chinese. A
# subscript (T_\text{step}, A_{\text{layer}}, M_\text{GPU}) is a symbol's name, the same in both
# languages, like the letters of a formula, so it is not read.
_SUBSCRIPT = re.compile(r"_\{?\s*$")
# ASCII words of three or more letters that a Chinese solution keeps in English, each one the
# catalogue's own choice: the collectives and passes of TECHNICAL above ("发送激活（forward）");
# devices and metrics with no Chinese name (GPU, CPU, MFU, HFU, FLOPs) and the binary unit MiB;
# a schedule's name (GPipe); and "goodput", which the catalogue keeps in brackets after its
# Chinese ("有效训练占比 (goodput)").
# The communication page's collective labels, which the solutions reuse, also keep
# micro-batch, ring, dispatch and combine ("K、V ring 传递"). Compared case-blind (All-gather).
TEXT_ALLOWED = TECHNICAL | {"gpu", "cpu", "mfu", "hfu", "flops", "mib", "gpipe", "goodput",
                            "micro-batch", "ring", "dispatch", "combine"}  # fmt: skip
# A word with inner hyphens is one word (all-reduce), so it is allowed or not as a whole.
_ASCII_WORD = re.compile(r"(?<![A-Za-z0-9-])[A-Za-z][A-Za-z-]*[A-Za-z](?![A-Za-z0-9-])")


def latex_texts(latex: str) -> list[str]:
    r"""The contents of every \text{...} in `latex` that is not a subscript (braces balanced)."""
    texts = []
    for match in re.finditer(r"\\text\s*\{", latex):
        if _SUBSCRIPT.search(latex[: match.start()]):
            continue
        depth, at = 1, match.end()
        while depth and at < len(latex):
            depth += {"{": 1, "}": -1}.get(latex[at], 0)
            at += 1
        texts.append(latex[match.end() : at - 1])
    return texts


def english_in_text(latex: str) -> list[str]:
    """The English words of `latex`'s \\text{...}, other than the allowed terms."""
    return [
        word
        for text in latex_texts(latex)
        for word in _ASCII_WORD.findall(text)
        if len(word) >= 3 and word.lower() not in TEXT_ALLOWED
    ]


def test_latex_texts_reads_text_but_not_subscripts() -> None:
    latex = r"T_\text{step} = \frac{\text{a {b}}}{A_{\text{layer}}} + \text{GPU-h}"
    assert latex_texts(latex) == ["a {b}", "GPU-h"]
    assert english_in_text(r"\text{1F1B: 阶段 } s \text{ runs } M_\text{GPU}") == ["runs"]


def test_every_generator_is_rendered_in_chinese_below() -> None:
    assert {item.generator for item in CHINESE_GENERATED} == set(GENERATORS)


# KaTeX reads these as commands or groups inside \text{...}, unless escaped.
_KATEX_SPECIAL = re.compile(r"(?<!\\)[%#&_]")


@pytest.mark.parametrize("item", CHINESE_GENERATED, ids=lambda item: item.id)
def test_a_chinese_worked_solution_says_its_words_in_chinese(
    item: GeneratedItem, chinese: None
) -> None:
    for inputs in _item_inputs(item):
        solution = question_for(item, inputs).solution
        assert solution is not None
        for step in solution.steps_latex:
            assert english_in_text(step) == [], (item.id, inputs, step)
            for text in latex_texts(step):
                assert not _KATEX_SPECIAL.search(text), (item.id, inputs, step)
