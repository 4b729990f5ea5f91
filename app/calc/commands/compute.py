"""`python -m app.calc compute`: training/inference FLOPs, time, GPU-hours, cost and MFU."""

from __future__ import annotations

import argparse

from app.calc.commands.options import add_model_options, parse_model_options, print_json
from app.calc.compute_query import ComputeQuery, compute_result


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    compute = commands.add_parser(
        "compute",
        help="FLOPs per token (6N / 8N / 2N), total FLOPs, time, GPU-hours, cost and MFU",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "The compute & time calculator (the page at /calculators/compute).\n\n"
            "FLOPs per token after Kaplan et al. 2020 (arXiv:2001.08361, Table 1): 6N training,\n"
            "8N with full recompute, 2N inference, N the non-embedding parameters; attention\n"
            "(--attention-term true) at the full count 4 n_layer n_ctx d_attn per forward, its\n"
            "causal half shown as a conversion; --achieved-flops-per-gpu gives utilization and\n"
            "aggregate throughput from a run's reported FLOP/s per GPU; Megatron's\n"
            "per-iteration count (Narayanan et al. 2021, arXiv:2104.04473, eq. (3)) beside it;\n"
            "time = FLOPs / (GPUs x dense peak x utilization).\n\n"
            "  python -m app.calc compute --preset gpt3-175b --tokens 300e9\n"
            "  python -m app.calc compute --preset custom --params 1008e9 --tokens 450e9 \\\n"
            "      --mode training_recompute --gpus 3072 --utilization 0.5224\n"
            "  python -m app.calc compute --preset custom --params 1008e9 --tokens 450e9 \\\n"
            "      --gpus 3072 --achieved-flops-per-gpu 163e12"
        ),
    )
    add_model_options(compute.add_argument_group("inputs (bounds as on the page)"), ComputeQuery)
    compute.add_argument("--json", action="store_true", help="print JSON (raw units)")
    return compute


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, ComputeQuery)
    r = compute_result(query)
    if args.json:
        return print_json(r)
    rows = [
        ("model", f"{r['model']}, N = {r['params']:.4g}"),
        ("tokens D", f"{r['tokens']:.4g}"),
        ("mode", r["mode"]),
        ("FLOPs per token (executed)", f"{r['flops_per_token']:.4g}"),
        ("total FLOPs (executed)", f"{r['total_flops']:.4g}"),
        ("total FLOPs (model)", f"{r['model_flops']:.4g}"),
        ("accelerator", f"{r['gpus']} x {r['gpu']}, {r['dtype']} {r['peak_flops_per_gpu']:.4g}"),
        ("utilization (HFU) / MFU", f"{r['utilization']:.1%} / {r['mfu']:.1%}"),
        ("time", f"{r['time_days']:,.2f} days ({r['time_s']:.4g} s)"),
        ("GPU-hours", f"{r['gpu_hours']:,.0f}"),
        ("cost", f"{r['cost']:,.0f} at {query.price_per_gpu_hour:g} per GPU-hour"),
        ("throughput", f"{r['tokens_per_s']:,.0f} tokens/s"),
    ]
    if r["megatron"]:
        m = r["megatron"]
        rows.append(("Megatron eq. (3) per iteration", f"{m['flops_per_iteration']:.4g}"))
        rows.append(("Megatron total", f"{m['total_flops']:.4g} ({m['iterations']:,.0f} it)"))
        if m["selective"]:
            sel = m["selective"]
            rows.append(("selective, ours / paper eq. (8)",
                         f"+{sel['extra']:.2%} / +{sel['paper_extra']:.2%} FLOPs"))  # fmt: skip
    if r["attention"]:
        a = r["attention"]
        rows.append(("attention per token, forward",
                     f"{a['forward_flops_per_token']:.4g} (causal half "
                     f"{a['causal_forward_flops_per_token']:.4g})"))  # fmt: skip
    if r["measured"]:
        m = r["measured"]
        rows.append(("measured MFU / HFU", f"{m['mfu']:.1%} / {m['hfu']:.1%}"))
    if r["achieved"]:
        a = r["achieved"]
        rows.append(("achieved: utilization", f"{a['utilization']:.1%} of peak"))
        rows.append(("achieved: aggregate", f"{a['aggregate_flops']:.4g} FLOP/s, "
                     f"{a['tokens_per_s']:,.0f} tokens/s, {a['time_days']:,.2f} days"))  # fmt: skip
    for label, value in rows:
        print(f"{label:<32}{value}")
    return 0
