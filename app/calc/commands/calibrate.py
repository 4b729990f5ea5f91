"""`python -m app.calc calibrate RUNS`: fit a performance profile to measured runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.calc.calibration import MEMORY_FREE, TIME_FREE, Calibration, fit
from app.calc.calibration_runs import load_runs
from app.calc.commands.options import print_json
from app.calc.performance import PARAMETERS


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    calibrate = commands.add_parser(
        "calibrate",
        help="fit a performance profile to your own measured training runs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Fit the planner's performance model (app.calc.performance) to measured runs: a\n"
            "least-squares fit on log step time, each parameter kept inside its physical\n"
            "bounds (app.calc.calibration), and, for runs that give their peak memory, of the\n"
            "memory parameters on log peak bytes. Prints each run's measured and predicted\n"
            "step time, and each run predicted by the profile fitted without it (leave-one-\n"
            "out, three runs or more). --out writes the profile, which `plan --profile` and\n"
            "the planner page take.\n\n"
            "RUNS is a JSON or CSV file, one run per row (docs/calibration.md): the model (a\n"
            "preset in 'model', or layers, hidden, heads, kv_heads, ffn_hidden, vocab), the\n"
            "cluster (gpu, gpus_per_node, nodes, intra_node, inter_node), seq_len and\n"
            "global_batch_tokens (or global_batch_sequences), the layout (dp, tp, pp, cp, ep,\n"
            "zero_stage, distributed_optimizer, recompute, micro_batch, schedule,\n"
            "virtual_stages), step_s or tokens_per_s_per_gpu, and optionally peak_memory_gb.\n\n"
            "  python -m app.calc calibrate my-runs.csv --out my-profile.json\n"
            "  python -m app.calc plan --preset llama3-8b --nodes 4 --profile my-profile.json"
        ),
    )
    calibrate.add_argument("runs", type=Path, help="the runs file (.json or .csv)")
    calibrate.add_argument("--out", type=Path, help="write the fitted profile here (JSON)")
    calibrate.add_argument(
        "--free",
        help=(
            "comma-separated parameters to fit; default "
            f"{','.join(TIME_FREE)}; any of {', '.join(PARAMETERS)}"
        ),
    )
    calibrate.add_argument(
        "--no-cross-validation", action="store_true", help="skip the leave-one-out fits"
    )
    calibrate.add_argument("--name", default="fitted", help="the profile's name")
    calibrate.add_argument("--json", action="store_true", help="print the report as JSON")
    return calibrate


def report_data(calibration: Calibration) -> dict:
    report = calibration.report
    return {
        "profile": calibration.profile.values() | {"name": calibration.profile.name},
        "free": list(report.free),
        "runs": [
            {
                "name": r.name,
                "measured_step_s": r.measured_step_s,
                "predicted_step_s": r.predicted_step_s,
                "held_out_step_s": r.held_out_step_s,
                "measured_memory_bytes": r.measured_memory_bytes,
                "predicted_memory_bytes": r.predicted_memory_bytes,
            }
            for r in report.residuals
        ],
        "mean_error": report.mean_error,
        "worst_error": report.worst_error,
        "held_out_mean_error": report.held_out_mean_error,
        "held_out_worst_error": report.held_out_worst_error,
        "memory_mean_error": report.memory_mean_error,
    }


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        text = args.runs.read_text()
    except OSError as error:
        parser.error(f"cannot read {args.runs}: {error.strerror}")
    kind = {".json": "json", ".csv": "csv"}.get(args.runs.suffix.lower())
    free = tuple(args.free.split(",")) if args.free else TIME_FREE
    try:
        runs = load_runs(text, kind)
        calibration = fit(
            runs, free=[n for n in free if n not in MEMORY_FREE],
            memory_free=[n for n in free if n in MEMORY_FREE] or MEMORY_FREE,
            cross_validate=not args.no_cross_validation, name=args.name,
        )  # fmt: skip
    except ValueError as error:
        parser.error(str(error))
    if args.out:
        args.out.write_text(calibration.profile.to_json())
    if args.json:
        return print_json(report_data(calibration))
    report = calibration.report
    print(f"{len(runs)} runs; fitted {', '.join(report.free)}")
    print(f"{'run':<32}{'measured s':>12}{'predicted':>11}{'ratio':>8}{'held out':>10}")
    for r in report.residuals:
        out = f"{r.held_out_ratio:>10.3f}" if r.held_out_ratio is not None else f"{'-':>10}"
        print(
            f"{r.name[:31]:<32}{r.measured_step_s:>12.4g}{r.predicted_step_s:>11.4g}"
            f"{r.ratio:>8.3f}{out}"
        )
    line = f"mean error {report.mean_error:.1%}, worst {report.worst_error:.1%}"
    if report.held_out_mean_error is not None:
        line += (
            f"; held out: mean {report.held_out_mean_error:.1%}, "
            f"worst {report.held_out_worst_error:.1%}"
        )
    if report.memory_mean_error is not None:
        line += f"; peak memory: mean error {report.memory_mean_error:.1%}"
    print(line)
    print("profile:")
    for key, value in calibration.profile.values().items():
        print(f"  {key:<24}{value:.4g}  {PARAMETERS[key].unit}")
    if args.out:
        print(f"written to {args.out}")
    return 0
