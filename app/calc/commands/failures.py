"""`python -m app.calc failures`: failure odds of a large job and its checkpoint interval."""

from __future__ import annotations

import argparse

from app.calc.commands.options import add_model_options, parse_model_options, print_json
from app.calc.failures_query import FailuresQuery, failures_result

HOUR = 3600.0


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "failures",
        help="P(failure) of an n-GPU job, its MTBF, Young/Daly checkpoint intervals, goodput",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Failures and checkpoints (the page at /calculators/failures). Exponential model:\n"
            "p = 1 - exp(-w/M) per unit, P = 1 - (1-p)^n for the job, M_job = M/n; checkpoint\n"
            "interval sqrt(2CM) (Young 1974) and Daly's higher-order form (Daly 2006); goodput\n"
            "1 - C/tau - (tau/2 + R)/M.\n\n"
            "  python -m app.calc failures --units 16384 --rate 50000 --checkpoint-minutes 5\n"
            "  python -m app.calc failures --rate-kind per_unit_per_month --rate 0.02 --json\n\n"
            "Checkpoint size (weights + fp32 master + optimizer states; no gradients), its write\n"
            "time at an aggregate bandwidth and the blocking copy of an async save:\n"
            "  python -m app.calc failures --ckpt-params 405e9 --ckpt-write-gbps 2000\n"
            "Several kinds of unit in series, M_job = 1 / sum(n_i / M_i):\n"
            "  python -m app.calc failures --series-gpus 16384 --series-gpu-rate 80000 \\\n"
            "      --series-hosts 2048 --series-host-rate 50000"
        ),
    )
    add_model_options(parser.add_argument_group("inputs (bounds as on the page)"), FailuresQuery)
    parser.add_argument("--json", action="store_true", help="print JSON (seconds) instead")
    return parser


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, FailuresQuery)
    r = failures_result(query)
    if args.json:
        return print_json(r)
    rows = [
        ("unit MTBF (hours)", f"{r['unit_mtbf_s'] / HOUR:,.1f}"),
        ("unit failures per month", f"{r['unit_failures_per_month']:.4g}"),
        (f"P(unit fails in {query.window_hours:g} h)", f"{r['unit_window_probability']:.4g}"),
        (f"P(job of {query.units:,} fails in {query.window_hours:g} h)",
         f"{r['job_window_probability']:.4g}"),
        ("job MTBF (hours)", f"{r['job_mtbf_s'] / HOUR:,.3f}"),
        (f"expected failures in {query.run_days:g} days", f"{r['expected_failures_in_run']:,.1f}"),
        ("Young interval (minutes)", f"{r['young_interval_s'] / 60:,.2f}"),
        ("Daly interval (minutes)", f"{r['daly_interval_s'] / 60:,.2f}"),
        ("lost per failure at Young (minutes)", f"{r['lost_per_failure_s'] / 60:,.2f}"),
        ("goodput at Young", f"{r['goodput_young']:.4f}"),
        ("goodput at Daly", f"{r['goodput_daly']:.4f}"),
    ]  # fmt: skip
    if r["goodput_interval"] is not None:
        rows.append((f"goodput at {query.interval_minutes:g} min", f"{r['goodput_interval']:.4f}"))
    if (ck := r["checkpoint"]) is not None:
        rows += [
            ("checkpoint (TB)", f"{ck['total_bytes'] / 1e12:,.4g}"),
            ("bytes per parameter", f"{ck['bytes_per_param']:g}"),
            (f"per writer of {ck['writers']:,} (GB)", f"{ck['bytes_per_writer'] / 1e9:,.4g}"),
            ("time to write (s)", f"{ck['write_s']:,.4g}"),
            ("async save blocks for (s)", f"{ck['async_blocking_s']:,.4g}"),
        ]
    if (se := r["series"]) is not None:
        for kind in se["kinds"]:
            rows.append((f"{kind['name']}: {kind['count']:,} units, MTBF (h)",
                         f"{kind['mtbf_s'] / HOUR:,.5g}"))  # fmt: skip
        rows += [
            ("series job MTBF (hours)", f"{se['job_mtbf_s'] / HOUR:,.4f}"),
            (f"series expected failures in {query.run_days:g} days",
             f"{se['expected_failures_in_run']:,.1f}"),
        ]  # fmt: skip
    width = max(len(label) for label, _ in rows) + 2
    for label, value in rows:
        print(f"{label:<{width}}{value:>14}")
    return 0
