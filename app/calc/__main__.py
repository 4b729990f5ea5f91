"""Command-line access to the calculators: `python -m app.calc memory --help`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from app.calc.memory import (
    MIXED_PRECISION_ADAM,
    ZERO_STAGE_NAMES,
    ZERO_STAGES,
    model_states_all_stages,
    model_states_per_gpu,
)
from app.calc.units import to_gb


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
        help="model-states memory per GPU under ZeRO stages 0-3",
        description=(
            "Bytes of weights, gradients and optimizer states per GPU for mixed-precision "
            "Adam (2 + 2 + 12 bytes per parameter), sharded by ZeRO over the data-parallel "
            "degree (ZeRO paper, arXiv:1910.02054, Section 5.1). Model states only: no "
            "activations or buffers. GB = 10^9 bytes."
        ),
    )
    memory.add_argument(
        "--params", type=_positive_float, required=True, help="number of parameters, e.g. 7.5e9"
    )
    memory.add_argument(
        "--dp-degree",
        type=_positive_int,
        required=True,
        help="data-parallel degree N_d (ranks ZeRO shards over)",
    )
    memory.add_argument(
        "--stage", type=int, choices=ZERO_STAGES, help="one ZeRO stage; all four when left out"
    )
    memory.add_argument("--json", action="store_true", help="print JSON (bytes) instead of a table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
