"""Command-line access to the calculators: `python -m app.calc --help`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from app.calc.commands import command_modules

Runner = Callable[[argparse.ArgumentParser, argparse.Namespace], int]


def build_parser() -> tuple[
    argparse.ArgumentParser, dict[str, tuple[argparse.ArgumentParser, Runner]]
]:
    parser = argparse.ArgumentParser(
        prog="python -m app.calc", description="ShardLab's calculators, from the shell."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    runners = {}
    for module in command_modules():
        sub = module.add_parser(commands)
        runners[sub.prog.split()[-1]] = (sub, module.run)
    return parser, runners


def main(argv: Sequence[str] | None = None) -> int:
    parser, runners = build_parser()
    args = parser.parse_args(argv)
    sub, run = runners[args.command]
    return run(sub, args)


if __name__ == "__main__":
    sys.exit(main())
