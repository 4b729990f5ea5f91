"""Shared pieces of the calculators' command line: argument types, and turning a calculator's
pydantic input model into options (one per field, with the model's own bounds and messages)."""

from __future__ import annotations

import argparse
import json
import sys
import typing

from pydantic import BaseModel, ValidationError

OPTION_PREFIX = "q_"


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def add_model_options(group: argparse._ActionsContainer, model: type[BaseModel]) -> None:
    """One `--field-name VALUE` option per field of `model`; validation is the model's."""
    for name, field in model.model_fields.items():
        choices = typing.get_args(field.annotation)
        literal = choices and all(isinstance(c, str | int) for c in choices)
        hint = f"one of {', '.join(map(str, choices))}; " if literal and len(choices) < 12 else ""
        default = field.default if field.default is not None else "derived"
        described = f"{field.description}; " if field.description else ""
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"{OPTION_PREFIX}{name}",
            metavar="VALUE",
            default=argparse.SUPPRESS,
            help=f"{described}{hint}default {default}",
        )


def parse_model_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace, model: type[BaseModel]
) -> typing.Any:
    """The validated model, or exit 2 with each problem named by its option."""
    given = {
        k[len(OPTION_PREFIX) :]: v for k, v in vars(args).items() if k.startswith(OPTION_PREFIX)
    }
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        problems = [
            f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" if e["loc"] else e["msg"]
            for e in exc.errors()
        ]
        parser.error("; ".join(problems))


def print_json(data: object) -> int:
    """What `--json` prints: the calculator's answer as the JSON API returns it. Exit code 0."""
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
