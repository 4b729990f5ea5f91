"""Lists the figures a card's prose states that its front matter does not account for.

    python -m app.cards.unsourced content/cards/zero-stages.md [more cards...]

For each figure: the line it is on, so an author can find the source that states it and add
it to that source's `figures` (or to `derived` / `inputs`). The loader applies the same check
to every card with `checked:` in its front matter (app/cards/audit.py says what counts).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cards.audit import audit_problems, prose_figures
from app.cards.models import CardMeta
from app.cards.service import _markdown
from app.yaml_text import load_yaml


def report(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    tokens = _markdown().parse(source)
    meta = CardMeta.model_validate(load_yaml(tokens[0].content))
    figures = prose_figures(tokens, (meta.title, meta.summary))
    body_starts = tokens[0].map[1] if tokens[0].map else 0
    lines = []
    for problem in audit_problems(figures, meta.sourced_figures(), meta.inputs, meta.derived):
        written = problem.split(" ", 1)[0]
        where = next((f"{n}: {line.strip()[:110]}" for n, line in enumerate(source.splitlines(), 1)
                      if n > body_starts and written in line), "")  # fmt: skip
        lines.append(f"{path.name}: {problem}\n    {where}" if where else f"{path.name}: {problem}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cards", nargs="+", type=Path, help="card files (content/cards/*.md)")
    args = parser.parse_args(argv)
    problems = [line for path in args.cards for line in report(path)]
    print("\n".join(problems) or "every figure is accounted for")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
