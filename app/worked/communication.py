"""Communication, worked: each collective's time per step in the alpha-beta model, written with
its link's latency and bandwidth and the bytes it sends. The communication calculator's page
shows it under each collective; the symbolic volume formulas come with app.calc's rows.

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
