"""docs/benchmarks.md's section for a GPU run, written from what bench/gpu_session.sh brought back.

Reads the JSON reports of bench/gpu_check.py (`--json`) and, where given, the session's
env.txt (GPU, driver, torch, NCCL, each step's exit code), and prints Markdown: the machine,
then per report one row per demo (its status, how many of its page's checks were equal,
explained or unexpected, the reason of a failure), every check that was not equal with its
reason, and every figure no page judges (times, busbw with its clock, the CUDA allocator's
bytes). Nothing is computed here that the reports do not hold.

With --profile (bench/gpu_profile.py's `--json` measurements), the GPU profile too: every GEMM
shape, and each measured ceiling set beside the planner's default for the device's preset
(app.calc.hardware.accelerator_for_device): the matmul ceiling beside the dense peak x
app.calc.planner.mamf_efficiency, and what a step's large GEMMs, a norm and a residual add take
under the default profile and under the measured one (app.calc.performance.hardware) beside
what the norm and the add took.

Run from the repository root (with the project installed, or PYTHONPATH=.):
  python bench/gpu_report.py OUT/nccl-1.json OUT/gloo-cuda-2.json --env OUT/env.txt \
      --profile OUT/gpu-profile-run.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from app.calc.hardware import accelerator_for_device, peak_flops
from app.calc.performance import Hardware, hardware, profile_from_dict
from app.calc.planner import mamf_efficiency
from app.calc.profiles import default_profile

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


def _units(device: str) -> tuple[float, str, float, str]:
    return (1e12, "TFLOP/s", 1e12, "TB/s") if device == "cuda" else (1e9, "GFLOP/s", 1e9, "GB/s")


def _ratio(measured: float, predicted: float) -> str:
    return f"{measured / predicted:.3f}"


def profile_section(run: dict[str, Any]) -> list[str]:
    """bench/gpu_profile.py's measurements as Markdown, each beside the planner's default."""
    flops, flops_unit, rate, rate_unit = _units(run["device"])
    dtype = run["dtype"]
    accelerator = accelerator_for_device(run["device_name"])
    peak = None
    if accelerator is not None:
        with contextlib.suppress(ValueError):  # no published peak in this type
            peak = peak_flops(accelerator, dtype)
    lines = [
        f"### GPU profile: {run['device_name']}, {run['versions']} — `bench/gpu_profile.py`",
        "",
        f"| M | N | K | iterations | ms | {dtype} {flops_unit} |"
        + (" of the dense peak |" if peak else ""),
        "|---:|---:|---:|---:|---:|---:|" + ("---:|" if peak else ""),
    ]
    for g in run["gemms"]:
        lines.append(
            f"| {g['m']:,} | {g['n']:,} | {g['k']:,} | {g['iterations']} | "
            f"{g['seconds'] * 1e3:.4f} | {g['flops_per_s'] / flops:.1f} |"
            + (f" {g['flops_per_s'] / peak:.3f} |" if peak else "")
        )
    if run["gemms_skipped"]:
        lines += ["", f"{run['gemms_skipped']} shape(s) skipped: --max-seconds ran out."]
    copy = run["copy"]
    lines += [
        "",
        f"HBM: dst.copy_(src) of {copy['size_bytes'] / 2**20:g} MiB, "
        f"{copy['bytes_per_s'] / rate:.3g} {rate_unit} (read + write). {run['nccl']}.",
    ]
    if run["all_reduces"]:
        lines += ["", "| all-reduce MiB | ms | algbw GB/s | busbw GB/s |", "|---:|---:|---:|---:|"]
    for row in run["all_reduces"]:
        lines.append(
            f"| {row['size_bytes'] / 2**20:g} | {row['seconds'] * 1e3:.4f} | "
            f"{row['algbw'] / 1e9:.1f} | {row['busbw'] / 1e9:.1f} |"
        )
    lines.append("")
    if accelerator is None or peak is None:
        lines.append(
            f"No accelerator preset for {run['device_name']} in {dtype}"
            " (app.calc.hardware.DEVICE_NAMES): no planner default to set these beside."
        )
        return lines
    return lines + _beside_the_planner(run, accelerator.slug, peak, accelerator.hbm_bytes_per_s)


def _beside_the_planner(
    run: dict[str, Any], slug: str, peak: float, datasheet_bytes_per_s: float
) -> list[str]:
    """Each ceiling, and each memory-bound kernel's time, beside what the planner takes for it
    under the default profile and under the measured one."""
    flops, flops_unit, rate, rate_unit = _units(run["device"])
    fitted, measured = default_profile(), profile_from_dict(run["profile"])
    mamf = mamf_efficiency(slug)
    default_hw = hardware(fitted, peak, mamf, datasheet_bytes_per_s)
    measured_hw = hardware(measured, peak, mamf, datasheet_bytes_per_s)
    ceiling = measured.gemm_flops
    assert ceiling is not None  # bench/gpu_profile.py always measures it
    copy = run["copy"]["bytes_per_s"]
    lines = [
        f"Beside the planner's default for the `{slug}` preset (dense {run['dtype']} peak "
        f"{peak / flops:g} {flops_unit}, HBM datasheet {datasheet_bytes_per_s / rate:g} "
        f"{rate_unit}) and the default profile `{fitted.name}` (gemm_efficiency "
        f"{fitted.gemm_efficiency:.3f}, hbm_efficiency {fitted.hbm_efficiency:.3f}, "
        f"{fitted.kernel_overhead_s * 1e6:.1f} µs a kernel):",
        "",
        "| figure | measured | planner, default profile | measured / default "
        "| planner, measured profile |",
        "|---|---:|---:|---:|---:|",
        f"| matmul ceiling ({flops_unit}) | {ceiling / flops:.1f} ({ceiling / peak:.3f} of peak) "
        f"| {peak * mamf / flops:.1f} ({mamf:.3f} of peak) | {_ratio(ceiling, peak * mamf)} "
        f"| {ceiling / flops:.1f} |",
        f"| a step's large GEMMs ({flops_unit}) | — | {default_hw.gemm_flops / flops:.1f} | "
        f"{_ratio(measured_hw.gemm_flops, default_hw.gemm_flops)} "
        f"| {measured_hw.gemm_flops / flops:.1f} |",
        f"| HBM copy ({rate_unit}) | {copy / rate:.3g} ({copy / datasheet_bytes_per_s:.3f} of "
        f"the datasheet) | — | — | — |",
        f"| memory-bound work's bandwidth ({rate_unit}) | — | "
        f"{default_hw.hbm_bytes_per_s / rate:.3g} | "
        f"{_ratio(measured_hw.hbm_bytes_per_s, default_hw.hbm_bytes_per_s)} | "
        f"{measured_hw.hbm_bytes_per_s / rate:.3g} |",
    ]
    for kernel in run.get("memory_bound", []):
        predicted = _kernel_seconds(kernel["bytes_moved"], default_hw)
        lines.append(
            f"| {kernel['kernel']}, {kernel['values_moved']} values x {kernel['elements']:,} "
            f"(ms) | {kernel['seconds'] * 1e3:.4f} ({kernel['bytes_per_s'] / rate:.3g} "
            f"{rate_unit}) | {predicted * 1e3:.4f} | {_ratio(kernel['seconds'], predicted)} | "
            f"{_kernel_seconds(kernel['bytes_moved'], measured_hw) * 1e3:.4f} |"
        )
    if run["all_reduces"]:
        lines.append(
            f"| intra_link_efficiency | {measured.intra_link_efficiency:.3f} | "
            f"{fitted.intra_link_efficiency:.3f} | "
            f"{_ratio(measured.intra_link_efficiency, fitted.intra_link_efficiency)} | "
            f"{measured.intra_link_efficiency:.3f} |"
        )
    return lines + [
        "",
        "The default profile's hbm_efficiency was fitted on the datasheet's bandwidth; the "
        "measured profile multiplies the copy's by it. Where the norm and the add run near the "
        "copy's bandwidth, the default's prediction is the closer and the measured profile "
        "counts the copy's shortfall twice; where they run near hbm_efficiency x the copy's, "
        "the measured profile is right.",
    ]


def _kernel_seconds(bytes_moved: float, hw: Hardware) -> float:
    """One memory-bound kernel as app/calc/planner/work.py times it: its bytes at the step's
    HBM bandwidth, plus the fixed cost per kernel (app/calc/planner/costs.py)."""
    return bytes_moved / hw.hbm_bytes_per_s + hw.kernel_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="*", type=Path, help="bench/gpu_check.py --json files")
    parser.add_argument("--env", type=Path, help="the session's env.txt")
    parser.add_argument("--profile", type=Path, help="bench/gpu_profile.py --json measurements")
    args = parser.parse_args(argv)
    if not args.reports and not args.profile:
        parser.error("give bench/gpu_check.py reports, --profile, or both")
    lines = ["## Demos on a GPU — `bench/gpu_session.sh`", ""]
    if args.env:
        lines += ["```", args.env.read_text().strip(), "```", ""]
    for path in args.reports:
        lines += [*report_section(json.loads(path.read_text())), ""]
    if args.profile:
        lines += [*profile_section(json.loads(args.profile.read_text())), ""]
    print("\n".join(lines).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
