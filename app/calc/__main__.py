"""Command-line access to the calculators: `python -m app.calc memory --help`."""

from __future__ import annotations

import argparse
import json
import sys
import typing
from collections.abc import Sequence

from pydantic import ValidationError

from app.calc.memory import (
    MIXED_PRECISION_ADAM,
    ZERO_STAGE_NAMES,
    ZERO_STAGES,
    model_states_all_stages,
    model_states_per_gpu,
)
from app.calc.training_query import TrainingQuery, training_result
from app.calc.units import GB, GIB, to_gb

MEMORY_UNIT_BYTES = {"GB": GB, "GiB": GIB}


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.calc", description="ShardLab's calculators, from the shell."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    memory = commands.add_parser(
        "memory",
        help="training memory per GPU (every term), or model states under ZeRO 0-3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Two modes.\n\n"
            "With --params and --dp-degree: bytes of weights, gradients and optimizer states\n"
            "per GPU for mixed-precision Adam (2 + 2 + 12 bytes per parameter), sharded by ZeRO\n"
            "over the data-parallel degree (ZeRO paper, arXiv:1910.02054, Section 5.1).\n\n"
            "Otherwise: the full training-memory calculator (the page at\n"
            "/calculators/training-memory), every term with its formula and source. Model\n"
            "fields left out come from --preset. GB = 10^9 bytes, GiB = 2^30 bytes.\n\n"
            "  python -m app.calc memory --params 7.5e9 --dp-degree 64\n"
            "  python -m app.calc memory --preset llama3-70b --dp 4 --tp 8 --pp 2 \\\n"
            "      --zero-stage 1 --recompute selective --seq-len 8192"
        ),
    )
    states = memory.add_argument_group("model states under ZeRO 0-3")
    states.add_argument("--params", type=_positive_float, help="number of parameters, e.g. 7.5e9")
    states.add_argument(
        "--dp-degree", type=_positive_int, help="data-parallel degree N_d (ranks ZeRO shards over)"
    )
    states.add_argument(
        "--stage", type=int, choices=ZERO_STAGES, help="one ZeRO stage; all four when left out"
    )
    full = memory.add_argument_group("full training memory (bounds as on the page)")
    for name, field in TrainingQuery.model_fields.items():
        choices = typing.get_args(field.annotation)
        hint = f"one of {', '.join(map(str, choices))}; " if choices and name != "preset" else ""
        default = field.default if field.default is not None else "from the preset"
        full.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"q_{name}",
            metavar="VALUE",
            default=argparse.SUPPRESS,
            help=f"{hint}default {default}",
        )
    memory.add_argument("--json", action="store_true", help="print JSON (bytes) instead of a table")
    return parser


def _training(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    given = {k[2:]: v for k, v in vars(args).items() if k.startswith("q_")}
    try:
        query = TrainingQuery.model_validate(given)
    except ValidationError as exc:
        problems = [
            f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" if e["loc"] else e["msg"]
            for e in exc.errors()
        ]
        parser.error("; ".join(problems))
    result = training_result(query)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    unit = MEMORY_UNIT_BYTES[query.unit]
    print(
        f"{result['model']['name']}: {result['total_params']:,} parameters; "
        f"dp {query.dp} x tp {query.tp} x pp {query.pp} x cp {query.cp}, ZeRO-{query.zero_stage}"
    )
    print(f"{'term':<34}{'GPU ' + query.unit:>12}{'CPU ' + query.unit:>12}  source")
    for t in result["terms"]:
        print(
            f"{t['label']:<34}{t['gpu_bytes'] / unit:>12.2f}{t['cpu_bytes'] / unit:>12.2f}"
            f"  {t['source']}"
        )
    print(f"{'total':<34}{result['gpu_bytes'] / unit:>12.2f}{result['cpu_bytes'] / unit:>12.2f}")
    verdict = "fits" if result["fits"] else "does not fit"
    print(
        f"{verdict} a {result['gpu']}: headroom {result['headroom_bytes'] / unit:.2f} "
        f"{query.unit}; largest micro-batch that fits: {result['largest_micro_batch']}"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.params is None and args.dp_degree is None and args.stage is None:
        return _training(parser, args)
    if args.params is None or args.dp_degree is None:
        parser.error("model-states mode needs both --params and --dp-degree")
    if args.stage is None:
        rows = model_states_all_stages(args.params, args.dp_degree)
    else:
        rows = [model_states_per_gpu(args.params, args.dp_degree, args.stage)]
    if args.json:
        payload = [
            {
                "zero_stage": r.zero_stage,
                "weights_bytes": r.weights_bytes,
                "grads_bytes": r.grads_bytes,
                "optimizer_bytes": r.optimizer_bytes,
                "total_bytes": r.total_bytes,
            }
            for r in rows
        ]
        json.dump(
            {"params": args.params, "dp_degree": args.dp_degree, "stages": payload},
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return 0
    print(f"{MIXED_PRECISION_ADAM.name}; {args.params:g} parameters, N_d = {args.dp_degree}")
    print(f"{'stage':<20}{'weights GB':>12}{'grads GB':>12}{'optimizer GB':>14}{'total GB':>12}")
    for r in rows:
        print(
            f"{ZERO_STAGE_NAMES[r.zero_stage]:<20}{to_gb(r.weights_bytes):>12.2f}"
            f"{to_gb(r.grads_bytes):>12.2f}{to_gb(r.optimizer_bytes):>14.2f}"
            f"{to_gb(r.total_bytes):>12.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
