"""docs/benchmarks.md's section for a GPU run, written from what bench/gpu_session.sh brought back.

Reads the JSON reports of bench/gpu_check.py (`--json`) and, where given, the session's
env.txt (GPU, driver, torch, NCCL, each step's exit code), and prints Markdown: the machine,
then per report one row per demo (its status, how many of its page's checks were equal,
explained or unexpected, the reason of a failure), every check that was not equal with its
reason, and every figure no page judges (times, busbw with its clock, the CUDA allocator's
bytes). Nothing is computed here that the reports do not hold.

  python bench/gpu_report.py OUT/nccl-1.json OUT/gloo-cuda-2.json --env OUT/env.txt
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

STATUSES = ("equal", "explained", "unexpected")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    else:
        text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return text.replace("|", "\\|")


def _label(scope: str, quantity: str) -> str:
    return f"{scope}: {quantity}" if scope else quantity


def report_section(report: dict[str, Any]) -> list[str]:
    """One report's Markdown: the demos, the checks that were not equal, the unjudged figures."""
    lines = [
        f"### {report['device_name']} ({report['device']}), {report['backend']}, "
        f"{report['ranks']} rank(s)",
        "",
        "| demo | status | equal / explained / unexpected | wall (s) | reason |",
        "|---|---|---:|---:|---|",
    ]
    for result in report["results"]:
        tally = Counter(check["status"] for check in result["checks"])
        counts = " / ".join(str(tally[s]) for s in STATUSES) if result["checks"] else "—"
        wall = _cell(result["wall_s"]) if "wall_s" in result else "—"
        lines.append(
            f"| {result['demo']} | {result['status']} | {counts} | {wall} | "
            f"{_cell(result['reason'])} |"
        )
    differing = [
        (result["demo"], check)
        for result in report["results"]
        for check in result["checks"]
        if check["status"] != "equal"
    ]
    if differing:
        lines += [
            "",
            "| demo | check | measured | predicted | status: reason |",
            "|---|---|---:|---:|---|",
        ]
        for demo, check in differing:
            label = _label(check["scope"], check["quantity"])
            lines.append(
                f"| {demo} | {_cell(label)} | {_cell(check['measured'])} | "
                f"{_cell(check['predicted'])} | {check['status']}: {_cell(check['reason'])} |"
            )
    figures = [(r["demo"], f) for r in report["results"] for f in r["figures"]]
    if figures:
        lines += ["", "| demo | figure (not judged) | measured |", "|---|---|---:|"]
        for demo, figure in figures:
            label = _label(figure["scope"], figure["quantity"])
            lines.append(f"| {demo} | {_cell(label)} | {_cell(figure['measured'])} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="bench/gpu_check.py --json files")
    parser.add_argument("--env", type=Path, help="the session's env.txt")
    args = parser.parse_args(argv)
    lines = ["## Demos on a GPU — `bench/gpu_session.sh`", ""]
    if args.env:
        lines += ["```", args.env.read_text().strip(), "```", ""]
    for path in args.reports:
        lines += [*report_section(json.loads(path.read_text())), ""]
    print("\n".join(lines).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
