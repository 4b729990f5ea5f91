"""`python -m app.calc roofline`: arithmetic intensity, ridge point, compute- or memory-bound."""

from __future__ import annotations

import argparse

from app.calc.commands.options import add_model_options, parse_model_options, print_json
from app.calc.roofline_query import RooflineQuery, roofline_result


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    roof = commands.add_parser(
        "roofline",
        help="arithmetic intensity, ridge point, compute/memory bound, matmul critical batch",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "The roofline calculator (the page at /calculators/roofline), after How To Scale\n"
            "Your Model, 'All About Rooflines': intensity = FLOPs / bytes; compute-bound iff\n"
            "intensity > peak / bandwidth; time between max(T_math, T_comms) and their sum.\n\n"
            "  python -m app.calc roofline --op matmul --b 256 --d 8192 --f 8192 --gpu h100-sxm\n"
            "  python -m app.calc roofline --op dot --n 1000000 --gpu tpu-v5e"
        ),
    )
    add_model_options(roof.add_argument_group("inputs (bounds as on the page)"), RooflineQuery)
    roof.add_argument("--json", action="store_true", help="print JSON (raw units)")
    return roof


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, RooflineQuery)
    r = roofline_result(query)
    if args.json:
        return print_json(r)
    rows = [
        ("operation", r["operation"]),
        ("accelerator", f"{r['gpu']}, {r['dtype']} ({r['dtype_bytes']} bytes/element)"),
        ("FLOPs", f"{r['flops']:.4g}"),
        ("bytes", f"{r['bytes']:.4g}"),
        ("intensity", f"{r['intensity']:.4g} FLOP/byte"),
        ("ridge point", f"{r['ridge']:.4g} FLOP/byte"),
        ("verdict", f"{r['bound']}-bound"),
        ("attainable", f"{r['attainable_flops']:.4g} FLOP/s ({r['fraction_of_peak']:.1%})"),
        ("time (max .. sum)", f"{r['time_lower_s']:.4g} .. {r['time_upper_s']:.4g} s"),
    ]
    if query.op == "matmul":
        crit = r["critical_batch"]
        rows.append(("compute-bound from B =", "never" if crit is None else f"{crit:,.1f}"))
    for label, value in rows:
        print(f"{label:<24}{value}")
    return 0
