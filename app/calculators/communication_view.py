"""The communication calculator's result as the page shows it.

Every number comes from app.calc.communication_query; this module picks, orders and formats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.calc.communication_query import CommunicationQuery, communication_result
from app.i18n import N_
from app.worked.communication import collective_time_latex, one_collective_latex


def seconds(value: float) -> str:
    """'1.234 s', '12.3 ms' or '45.6 µs'."""
    if value >= 1:
        return f"{value:,.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:,.1f} ms"
    return f"{value * 1e6:,.1f} µs"


def gigabytes(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:,.3f} GB"


def rate(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:,.1f} GB/s"


@dataclass(frozen=True)
class Bar:
    key: str
    label: str
    seconds: float
    text: str
    width_percent: float
    color: int


@dataclass(frozen=True)
class CommunicationView:
    result: dict[str, Any]
    sections: list[dict[str, Any]]  # one per strategy in use, with its rows
    bars: list[Bar]  # each strategy, all communication, compute
    compute_percent: float  # where the compute time falls on the bars' scale
    one_collective_tex: list[str]  # the chosen collective on its own, worked

    @property
    def links_used(self) -> list[dict[str, Any]]:
        return list(
            {s["link"]: self.result["links"][s["strategy"]] for s in self.sections}.values()
        )


def communication_view(query: CommunicationQuery) -> CommunicationView:
    result = communication_result(query)
    sections = []
    for strategy in result["strategies"]:
        rows = [r for r in result["collectives"] if r["strategy"] == strategy["strategy"]]
        if rows:
            link = result["links"][strategy["strategy"]]
            sections.append(
                {
                    **strategy,
                    "link_name": link["name"],
                    "rows": [{**r, "time_tex": collective_time_latex(r)} for r in rows],
                }
            )
    entries = [(s["strategy"], s["label"], s["time_s"]) for s in sections]
    entries.append(("comm", N_("All communication"), result["comm_s"]))
    entries.append(("compute", N_("Compute"), result["compute_s"]))
    scale = max(t for _, _, t in entries) or 1.0
    bars = [
        Bar(key, label, t, seconds(t), 100 * t / scale, index % 8)
        for index, (key, label, t) in enumerate(entries)
    ]
    return CommunicationView(
        result,
        sections,
        bars,
        100 * result["compute_s"] / scale,
        one_collective_latex(result["collective"]),
    )
