"""`python -m app.calc pipeline`: simulate a pipeline schedule; a text Gantt and its bubble."""

from __future__ import annotations

import argparse

from app.calc.commands.options import add_model_options, parse_model_options, print_json
from app.calc.pipeline import simulate, text_gantt
from app.calc.pipeline_query import PipelineQuery, pipeline_result


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    pipeline = commands.add_parser(
        "pipeline",
        help="pipeline schedules (GPipe, 1F1B, interleaved, ZB-H1): Gantt, bubble, in-flight",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Simulates one training step of a pipeline schedule action by action (the page at\n"
            "/calculators/pipeline) and prints every stage as a text Gantt, the bubble both\n"
            "ways (idle / (p x total) and idle / busy = t_pb / t_id) beside the closed form,\n"
            "and the peak micro-batches in flight per stage. Times are per micro-batch per\n"
            "stage, in any one unit. Sources: Narayanan et al., arXiv:2104.04473, Section 2.2;\n"
            "Qi et al., arXiv:2401.10241, Section 2.1 (ZB-H1).\n\n"
            "  python -m app.calc pipeline --schedule 1f1b --pp 4 --microbatches 8\n"
            "  python -m app.calc pipeline --schedule interleaved --pp 4 --microbatches 8 \\\n"
            "      --virtual-stages 2 --json\n"
            "  python -m app.calc pipeline --pp 4 --microbatches 16 --stage-times 8,8,8,10.41"
        ),
    )
    add_model_options(
        pipeline.add_argument_group("schedule (bounds as on the page)"), PipelineQuery
    )
    pipeline.add_argument(
        "--json", action="store_true", help="print JSON (every block) instead of a text Gantt"
    )
    return pipeline


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, PipelineQuery)
    result = pipeline_result(query)
    if args.json:
        return print_json(result)
    step, lines = text_gantt(simulate(query.setup(query.schedule)))
    chunks = f", v = {result['virtual_stages']}" if query.schedule == "interleaved" else ""
    print(f"{result['schedule_name']}: p = {query.pp}, m = {query.microbatches}{chunks}")
    print(f"one character = {step:g} time units; digits: micro-batch (from 1, mod 10); '.': idle")
    print("\n".join(lines))
    cf = result["closed_form"]
    print(f"total time {result['total_time']:g}, ideal {result['ideal_time']:g}")
    print(f"{'bubble':<34}{'simulated':>12}{'closed form':>14}")
    print(
        f"{'relative to ideal (idle / busy)':<34}{_pct(result['bubble_over_ideal']):>12}"
        f"{_pct(cf['over_ideal']):>14}"
    )
    print(
        f"{'fraction of total (idle / p·total)':<34}"
        f"{_pct(result['bubble_fraction_of_total']):>12}{_pct(cf['fraction_of_total']):>14}"
    )
    print(f"closed form: {cf['source']}")
    if not cf["exact"]:
        print("  (the closed form leaves out what this set-up has; the simulation includes it)")
    if len(set(result["stage_scale"])) > 1:
        scales = ", ".join(f"{s:g}" for s in result["stage_scale"])
        print(f"unequal stages, relative times {scales}")
        if result["imbalanced_step"] is not None:
            print(
                "  step = (F + B + W)(sum s_i + (m - 1) max s_i) = "
                f"{result['imbalanced_step']:g}, as simulated"
            )
    peaks = " ".join(f"{n:g}" for n in result["peak_in_flight"])
    print(f"peak micro-batches in flight, stage 0..{query.pp - 1}: {peaks}")
    for row in result["comparison"]:
        if row["problem"]:
            print(f"  {row['name']:<36} cannot run: {row['problem']}")
        else:
            print(
                f"  {row['name']:<36} total {row['total_time']:>9g}  bubble/ideal "
                f"{_pct(row['bubble_over_ideal']):>9}  peak in flight {row['peak_in_flight']:g}"
            )
    return 0
