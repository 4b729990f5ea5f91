"""`python -m app.calc memory`: training memory per GPU, or model states under ZeRO 0-3."""

from __future__ import annotations

import argparse

from app.calc.commands.options import (
    add_model_options,
    parse_model_options,
    positive_float,
    positive_int,
    print_json,
)
from app.calc.memory import (
    MIXED_PRECISION_ADAM,
    ZERO_STAGE_NAMES,
    ZERO_STAGES,
    model_states_all_stages,
    model_states_per_gpu,
)
from app.calc.training_query import TrainingQuery, training_result
from app.calc.units import MEMORY_UNITS, to_gb


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
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
    states.add_argument("--params", type=positive_float, help="number of parameters, e.g. 7.5e9")
    states.add_argument(
        "--dp-degree", type=positive_int, help="data-parallel degree N_d (ranks ZeRO shards over)"
    )
    states.add_argument(
        "--stage", type=int, choices=ZERO_STAGES, help="one ZeRO stage; all four when left out"
    )
    full = memory.add_argument_group("full training memory (bounds as on the page)")
    add_model_options(full, TrainingQuery)
    memory.add_argument("--json", action="store_true", help="print JSON (bytes) instead of a table")
    return memory


def _training(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, TrainingQuery)
    result = training_result(query)
    if args.json:
        return print_json(result)
    unit = MEMORY_UNITS[query.unit]
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


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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
        return print_json({"params": args.params, "dp_degree": args.dp_degree, "stages": payload})
    print(f"{MIXED_PRECISION_ADAM.name}; {args.params:g} parameters, N_d = {args.dp_degree}")
    print(f"{'stage':<20}{'weights GB':>12}{'grads GB':>12}{'optimizer GB':>14}{'total GB':>12}")
    for r in rows:
        print(
            f"{ZERO_STAGE_NAMES[r.zero_stage]:<20}{to_gb(r.weights_bytes):>12.2f}"
            f"{to_gb(r.grads_bytes):>12.2f}{to_gb(r.optimizer_bytes):>14.2f}"
            f"{to_gb(r.total_bytes):>12.2f}"
        )
    return 0
