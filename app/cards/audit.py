"""The fact audit: every number a card's prose states is accounted for.

A number in a card is one of three things, and the front matter says which:
- a figure a source states (`sources[].figures`, the source giving the place it says it),
- a figure the card computes from others (`derived`: the figure and the arithmetic, which the
  loader evaluates and compares at the figure's printed precision), or
- a value chosen for a scenario (`inputs`: "a 7 B model on 64 GPUs"), which is not a fact.
Figures a calculator computes sit inside ```example blocks and are never typed into prose, so
the audit reads prose only: text, headings, tables and math, not code, examples or the
Sources section. Single digits (counts, stage numbers) and years are left out; numbers that
locate a passage ("Section 3.1", "Table 5") are citations, not figures.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w]*[.,]?\d)")
# Text right before a number that makes it a locator in a source rather than a figure.
LOCATOR = re.compile(
    r"(?:sections?|§|tables?|figures?|figs?\.|eqs?\.|equations?|appendix|chapter|arxiv:|"
    r"lines?|pages?|pp?\.|issues?|step|#|v|第|表|图|式|节|附录)\s*(?:\d+(?:\.\d+)*\s*(?:,|and|to|–|-|和|、)\s*)*$",
    flags=re.IGNORECASE,
)
YEARS = range(1990, 2036)
PROSE_INLINE = {"text", "math_inline", "math_inline_double"}
PROSE_BLOCKS = {"math_block", "math_block_label"}
SOURCES_HEADINGS = {"Sources", "参考文献"}
FIRST_HEADINGS = {"In 30 seconds", "30 秒回答"}  # a section's name, not a figure


def to_figure(value: object) -> Decimal:
    """A figure as YAML or prose writes it (1120, 1.5, "1,120", "7.5e9") as an exact number."""
    text = repr(value) if isinstance(value, float) else str(value)
    try:
        return Decimal(text.replace(",", "").strip())
    except InvalidOperation as exc:
        raise ValueError(f"{value!r} is not a number") from exc


def _exempt(figure: Decimal) -> bool:
    whole = figure == figure.to_integral_value()
    return whole and (figure < 10 or int(figure) in YEARS)


def numbers_in(text: str) -> Iterable[tuple[str, Decimal]]:
    for match in NUMBER.finditer(text):
        before, after = text[: match.start()], text[match.end() :]
        # 10^9 and 2^{30}: a base or an exponent is notation, not a figure.
        if after.startswith("^") or re.search(r"\^\{?$", before) or re.search(r"_\{?$", before):
            continue
        if LOCATOR.search(before[-40:]):
            continue
        figure = to_figure(match.group())
        if not _exempt(figure):
            yield match.group(), figure


def prose_figures(tokens: list, headline: Iterable[str] = ()) -> dict[Decimal, str]:  # noqa: ANN001
    """Each figure the card's prose states, with the text it was written as; `headline` is the
    title and summary, which the card list and search show on their own."""
    found: dict[Decimal, str] = {}
    for text in headline:
        for written, figure in numbers_in(text):
            found.setdefault(figure, written)
    in_sources = False
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2":
            in_sources = tokens[i + 1].content.strip() in SOURCES_HEADINGS
        if in_sources:
            continue
        texts = []
        if token.type == "inline" and token.content.strip() in FIRST_HEADINGS:
            continue
        if token.type == "inline":
            texts = [c.content for c in token.children or [] if c.type in PROSE_INLINE]
        elif token.type in PROSE_BLOCKS:
            texts = [token.content]
        for text in texts:
            for written, figure in numbers_in(text):
                found.setdefault(figure, written)
    return found


_OPERATORS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
}  # fmt: skip


def evaluate(expression: str) -> tuple[float, list[Decimal]]:
    """The value of plain arithmetic (numbers, + - * / **, brackets) and the numbers it uses."""
    used: list[Decimal] = []

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            used.append(to_figure(node.value))
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(f"only numbers and + - * / ** are allowed in {expression!r}")

    try:
        tree = ast.parse(expression.replace("×", "*").replace(",", ""), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{expression!r} is not arithmetic") from exc
    return value(tree.body), used


def half_unit(figure: Decimal) -> Decimal:
    """Half the last printed digit: 1.5 is 1.45–1.55, and 280 (an integer) is 275–285."""
    exponent = figure.as_tuple().exponent
    if isinstance(exponent, int) and exponent >= 0:
        exponent = figure.normalize().as_tuple().exponent
    return Decimal(1).scaleb(int(exponent)) / 2


def unit_constant(figure: Decimal) -> bool:
    """Numbers arithmetic may use without a source: unit conversions and small counts."""
    if figure != figure.to_integral_value() or figure < 0:
        return False
    n = int(figure)
    powers = {10**k for k in range(31)} | {1024**k for k in range(1, 6)} | {2**k for k in range(31)}
    return n < 10 or n in powers or n in {24, 30, 60, 365, 3600, 86400}


def audit_problems(
    stated: Mapping[Decimal, str],
    sourced: Iterable[Decimal],
    inputs: Iterable[Decimal],
    derived: Mapping[Decimal, str],
) -> list[str]:
    """Why the card's figures are not all accounted for (empty when they are)."""
    covered = set(sourced) | set(inputs) | set(derived)
    problems = [
        f"{written} appears in the prose but no source states it, nor is it in `derived` or "
        "`inputs`"
        for figure, written in stated.items()
        if figure not in covered
    ]
    for figure, expression in derived.items():
        try:
            result, used = evaluate(expression)
        except (ValueError, ZeroDivisionError) as exc:
            problems.append(f"derived {figure}: {exc}")
            continue
        if abs(Decimal(repr(result)) - figure) > half_unit(figure) * Decimal("1.000001"):
            problems.append(f"derived {figure}: {expression} = {result:.6g}, which does not "
                            f"round to {figure}")  # fmt: skip
        strays = [u for u in used if u not in covered and not unit_constant(u)]
        problems += [f"derived {figure}: {u} in {expression!r} has no source" for u in strays]
    return problems
