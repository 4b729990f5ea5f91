"""`python -m app.calc plan`: every parallel layout of a model on a cluster, ranked."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.calc.commands.options import (
    OPTION_PREFIX,
    add_model_options,
    parse_model_options,
    print_json,
)
from app.calc.planner_answer import planner_result
from app.calc.planner_query import PlannerQuery

ROWS = 15


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    plan = commands.add_parser(
        "plan",
        help="parallel layout planner: dp x tp x pp x cp x ep layouts ranked by step time",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Every valid dp x tp x pp x cp x ep layout of a model on a cluster (the page at\n"
            "/calculators/planner), with ZeRO, recompute, micro-batch and pipeline schedule:\n"
            "memory per GPU (app.calc.training), the step time term by term (compute,\n"
            "recompute, exposed TP / CP+EP / PP / DP communication, bubble), fastest first;\n"
            "the Pareto front of step time and memory; and how many candidates each rule cut.\n"
            "Give a layout (--dp, --tp, ...) to see why it is not the best. Model fields left\n"
            "out come from --preset. --run SLUG takes a published run's model, cluster, batch\n"
            "and layout (app.calc.planner.published) and sets its figure beside the planner's.\n"
            "--profile takes a built-in performance profile's name or a profile file written by\n"
            "`python -m app.calc calibrate` (or bench/gpu_profile.py).\n\n"
            "  python -m app.calc plan --preset llama3-8b --nodes 1\n"
            "  python -m app.calc plan --preset llama3-70b --nodes 4 --dp 4 --tp 8 --json\n"
            "  python -m app.calc plan --run bloom-176b"
        ),
    )
    add_model_options(plan.add_argument_group("inputs (bounds as on the page)"), PlannerQuery)
    plan.add_argument(
        "--json", action="store_true", help="print the API's JSON (bytes, seconds) instead"
    )
    return plan


def _layout(layout: dict) -> str:
    zero = "dist-opt" if layout["distributed_optimizer"] else f"ZeRO-{layout['zero_stage']}"
    v = f" v={layout['virtual_stages']}" if layout["virtual_stages"] > 1 else ""
    return (
        f"{layout['dp']:>5} {layout['tp']:>3} {layout['pp']:>3} {layout['cp']:>3} "
        f"{layout['ep']:>3} {zero:<9}{layout['recompute']:<10}{layout['micro_batch']:>3} "
        f"{layout['schedule'] + v:<15}"
    )


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    profile = getattr(args, f"{OPTION_PREFIX}profile", None)
    if profile and Path(profile).is_file():
        setattr(args, f"{OPTION_PREFIX}profile", Path(profile).read_text())
    query = parse_model_options(parser, args, PlannerQuery)
    result = planner_result(query)
    if args.json:
        return print_json(result)
    n = result["cluster"]
    print(
        f"{result['model']}: {result['total_params']:,} parameters on {n['gpus']} x "
        f"{n['gpu_name']} ({n['nodes']} x {n['gpus_per_node']}); "
        f"{result['global_batch_sequences']} sequences of {result['seq_len']} tokens per step"
    )
    print(f"performance profile: {result['profile']['name']}")
    print(
        f"{result['enumerated']} candidates, {result['valid']} valid, "
        f"{result['feasible']} fit; fastest first (* on the Pareto front):"
    )
    print(
        f"{'#':>3}    dp  tp  pp  cp  ep ZeRO     recompute   b schedule       "
        f"{'GB/GPU':>8}{'step s':>9}{'MFU %':>7}{'days':>8}"
    )
    for i, row in enumerate(result["ranked"][:ROWS], 1):
        print(
            f"{i:>3}{'*' if row['pareto'] else ' '} {_layout(row['layout'])}"
            # A space before each figure keeps the columns apart however wide one grows (a
            # slow measured profile's step takes hours).
            f" {row['memory_bytes'] / 1e9:>7.2f} {row['step_time_s']:>8.3f}"
            f" {100 * row['mfu']:>6.1f} {row['days']:>7.1f}"
        )
    if len(result["ranked"]) > ROWS:
        print(f"    ... {len(result['ranked']) - ROWS} more: see --json")
    chosen = result["chosen"]
    if chosen:
        print(f"where the step goes, {chosen['layout']['description']}:")
        for term, seconds in chosen["step"].items():
            print(f"  {term:<14}{seconds:>10.4f} s")
    why = result["why_not"]
    if why:
        print(f"why not {why['layout']['description']}: {why['explanation']}")
    published = result["published"]
    if published:
        print(f"published: {published['title']} ({published['source']})")
        if published["broken"]:
            print(f"  {published['layout']['description']} breaks {published['broken']}")
        else:
            print(
                f"  {published['layout']['description']}: published {published['published']:g} "
                f"{published['metric']}, planner {published['predicted']:.4g}, ratio "
                f"{published['ratio']:.2f} (band {published['band'][0]}-{published['band'][1]})"
                f"; {published['slowdown']:.2f}x the best step time"
            )
            print(f"  why: {published['gap']}")
    print("never considered:")
    for group in result["rejected"]:
        print(f"  {group['rule']:<30}{group['count']:>8}  {group['description']}")
    return 0
