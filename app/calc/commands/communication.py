"""`python -m app.calc communication`: communication volume and time per GPU per training step."""

from __future__ import annotations

import argparse

from app.calc.commands.options import add_model_options, parse_model_options, print_json
from app.calc.communication_query import CommunicationQuery, communication_result
from app.calc.units import GB


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "communication",
        help="communication volume and time per GPU per step, for DP/ZeRO, TP, PP, EP and CP",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Every collective one GPU takes part in during a training step: count, elements,\n"
            "bytes and alpha-beta time over the link chosen for each dimension (the page at\n"
            "/calculators/communication). Ring factors from nccl-tests doc/PERFORMANCE.md;\n"
            "ZeRO arXiv:1910.02054 Section 7; Megatron-LM arXiv:1909.08053 Section 3.\n"
            "GB = 10^9 bytes.\n\n"
            "  python -m app.calc communication --preset llama3-70b --dp 4 --tp 8 --pp 2\n"
            "  python -m app.calc communication --preset mixtral-8x7b --dp 8 --tp 1 --pp 1 \\\n"
            "      --ep 8 --zero-stage 3 --json\n\n"
            "One collective on its own (--collective, --collective-ranks, --collective-mb,\n"
            "--collective-link) with nccl-tests' bus factors (src/*.cu *GetBw): all-reduce\n"
            "2(N-1)/N; reduce-scatter, all-gather, all-to-all, gather, scatter (N-1)/N;\n"
            "broadcast, reduce 1.\n\n"
            "  python -m app.calc communication --collective reduce --collective-ranks 8 \\\n"
            "      --collective-mb 1000 --collective-link nvlink4"
        ),
    )
    add_model_options(parser.add_argument_group("inputs (bounds as on the page)"),
                      CommunicationQuery)  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print JSON (bytes, seconds)")
    return parser


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, CommunicationQuery)
    result = communication_result(query)
    if args.json:
        return print_json(result)
    print(
        f"{result['model']}: {result['total_params']:,} parameters; dp {query.dp} x tp "
        f"{query.tp} x pp {query.pp} x cp {query.cp} = {result['gpus']} GPUs, ep {query.ep}, "
        f"ZeRO-{query.zero_stage}, {query.dtype}"
    )
    print(f"{'collective':<60}{'ranks':>6}{'calls':>8}{'GB/GPU':>10}{'link':>10}{'time s':>10}")
    for r in result["collectives"]:
        print(
            f"{r['strategy'].upper() + ': ' + r['label']:<60}{r['ranks']:>6}"
            f"{r['calls_per_step']:>8}{r['bytes_per_step'] / GB:>10.3f}{r['link']:>10}"
            f"{r['time_s']:>10.4f}"
        )
    print(f"{'communication':<84}{result['bytes_per_step'] / GB:>10.3f}{result['comm_s']:>10.4f}")
    print(
        f"compute {result['compute_s']:g} s; step {result['step_s_perfect_overlap']:.4f} s with "
        f"perfect overlap, {result['step_s_no_overlap']:.4f} s with none"
    )
    print(
        f"\none collective of S = {query.collective_mb:g} MB on N = {query.collective_ranks} "
        f"ranks over {query.collective_link} (nccl-tests bus factors):"
    )
    print(f"{'collective':<16}{'factor':>8}{'GB sent':>10}{'time s':>12}{'algbw GB/s':>12}"
          f"{'busbw GB/s':>12}")  # fmt: skip
    for r in result["all_collectives"]:
        mark = " <" if r["collective"] == query.collective else ""
        print(
            f"{r['collective']:<16}{r['bus_factor']:>8.4f}{r['sent_bytes'] / GB:>10.3f}"
            f"{r['time_s']:>12.6f}{r['algbw_bytes_per_s'] / GB:>12.1f}"
            f"{r['busbw_bytes_per_s'] / GB:>12.1f}{mark}"
        )
    return 0
