"""Communication, worked: each collective's time per step in the alpha-beta model, written with
its link's latency and bandwidth and the bytes it sends. The communication calculator's page
shows it under each collective; the symbolic volume formulas come with app.calc's rows. One
collective on its own (the page's "one collective" section) gets its bytes, time and nccl-tests'
algbw and busbw.

Every number comes from app.calc.communication_query's rows and app.calc.links.
"""

from __future__ import annotations

from typing import Any

from app.calc.links import LINKS
from app.formatting import latex_number


def collective_time_latex(row: dict[str, Any]) -> str:
    """t = calls x (steps * alpha + bytes / beta), with this row's numbers."""
    link = LINKS[row["link"]]
    sent = row["bytes_per_step"] / row["calls_per_step"]
    return (
        f"{row['calls_per_step']} \\times \\left({row['latency_steps_per_call']} \\cdot "
        f"{link.latency_s * 1e6:g}\\,\\mu s + \\frac{{{latex_number(sent)}\\,B}}"
        f"{{{link.bandwidth_bytes_per_s / 1e9:g}\\,GB/s}}\\right) = "
        f"{latex_number(row['time_s'])}\\,s"
    )


def one_collective_latex(row: dict[str, Any]) -> list[str]:
    """A collective on its own: the busiest rank's bytes, its time, algbw and busbw, with this
    row's numbers (app.calc.communication_query.collective_row)."""
    link = LINKS[row["link"]]
    n, size = row["ranks"], row["payload_bytes"]
    factor_tex = row["bus_factor_latex"].replace("N", str(n))
    return [
        rf"V = {row['bus_factor_latex']}\,S = {factor_tex} \times {latex_number(size)}\,B "
        rf"= {latex_number(row['sent_bytes'])}\,B",
        rf"t = k\,\alpha + \frac{{V}}{{\beta}} = {row['latency_steps']} \cdot "
        rf"{link.latency_s * 1e6:g}\,\mu s + \frac{{{latex_number(row['sent_bytes'])}\,B}}"
        rf"{{{link.bandwidth_bytes_per_s / 1e9:g}\,GB/s}} = {latex_number(row['time_s'])}\,s",
        rf"\text{{algbw}} = \frac{{S}}{{t}} = {latex_number(row['algbw_bytes_per_s'] / 1e9)}"
        rf"\,GB/s, \quad \text{{busbw}} = \text{{algbw}} \times {factor_tex} = "
        rf"{latex_number(row['busbw_bytes_per_s'] / 1e9)}\,GB/s",
    ]
