"""The collectives demo's page: ring bytes, gloo's bytes and nccl-tests' bandwidths (app.calc)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from app.calc.bandwidth import busbw_bytes_per_s, slowest_rank_median_s
from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor
from app.calc.gloo import gloo_bytes_per_rank
from app.calc.hardware import accelerator_for_device, link_busbw_peak_bytes_per_s
from app.calc.messages import Message
from app.formatting import bytes_human, latex_fraction
from app.i18n import N_, translate
from app.live.demo_page import DemoPage
from app.live.verdict import (
    GLOO_HEADERS,
    Check,
    check,
    gloo_header_allowance_bytes,
    wire_check,
)
from demos.specs.collectives import KINDS, CollectivesParams, run_times_s

# Chinese keeps all-reduce, reduce-scatter, all-gather and all-to-all as they are
# (content/glossary.yaml); only broadcast has a Chinese name.
KIND_NAMES = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "broadcast": N_("broadcast"),
    "all_to_all": "all-to-all",
}
# What S is for each kind (nccl-tests doc/PERFORMANCE.md).
SIZE_MEANING = {
    "all_reduce": N_("the buffer"),
    "reduce_scatter": N_("the whole input"),
    "all_gather": N_("the whole output"),
    "broadcast": N_("the buffer"),
    "all_to_all": N_("one rank's buffer"),
}
FACTOR_LATEX = {
    "all_reduce": r"\tfrac{2(N-1)}{N}",
    "reduce_scatter": r"\tfrac{N-1}{N}",
    "all_gather": r"\tfrac{N-1}{N}",
    "broadcast": "1",
    "all_to_all": r"\tfrac{N-1}{N}",
}


# Why gloo's wire bytes differ from the ring's, per kind (the page's explanation, in one line).
WIRE_REASONS = {
    "all_reduce": GLOO_HEADERS,
    "reduce_scatter": N_(
        "gloo's reduce-scatter runs a whole all-reduce and keeps its chunk: twice the ring's bytes"
    ),
    "all_gather": GLOO_HEADERS,
    "broadcast": N_(
        "gloo broadcasts down a binomial tree: the root writes S to each child, leaves write "
        "nothing"
    ),
    "all_to_all": GLOO_HEADERS,
}


@dataclass(frozen=True)
class CollectivesPrediction:
    params: CollectivesParams
    world_size: int

    kinds = KINDS

    @property
    def sizes(self) -> list[int]:
        return self.params.payload_bytes(self.world_size)

    @staticmethod
    def name(kind: str) -> str:
        return str(translate(KIND_NAMES[kind]))

    @staticmethod
    def size_meaning(kind: str) -> str:
        return SIZE_MEANING[kind]

    def factor(self, kind: str) -> Fraction:
        return ring_factor(Collective(kind), self.world_size)

    def logical_bytes(self, kind: str, payload_bytes: int) -> float:
        return ring_bytes_per_rank(Collective(kind), payload_bytes, self.world_size)

    def wire_bytes(self, kind: str, payload_bytes: int) -> list[float]:
        """What gloo's algorithm writes on each rank (app.calc.gloo)."""
        return [
            gloo_bytes_per_rank(Collective(kind), payload_bytes, self.world_size, rank)
            for rank in range(self.world_size)
        ]

    def wire_agrees(self, kind: str, payload_bytes: int, measured: list[float]) -> bool:
        predicted = self.wire_bytes(kind, payload_bytes)
        slack = gloo_header_allowance_bytes(payload_bytes, self.world_size)
        return all(p <= m <= p + slack for p, m in zip(predicted, measured, strict=True))

    def logical_agrees(self, kind: str, payload_bytes: int, measured: list[float]) -> bool:
        return all(m == self.logical_bytes(kind, payload_bytes) for m in measured)

    @staticmethod
    def time_s(event: dict[str, Any]) -> float:
        return slowest_rank_median_s(run_times_s(event["ranks"])[0])

    @staticmethod
    def link_peak(device: str, backend: str | None) -> dict[str, Any] | None:
        """The busbw the device's scale-up link allows NCCL (app.calc.hardware), or None: CPU
        ranks talk over loopback, gloo moves even CUDA tensors through host memory, and a GPU
        without a preset has no link assumed."""
        accelerator = accelerator_for_device(device)
        if accelerator is None or backend != "nccl":
            return None
        return {
            "device": accelerator.name,
            "link": accelerator.interconnect,
            "busbw_gbps": link_busbw_peak_bytes_per_s(accelerator) / 1e9,
        }

    @staticmethod
    def recorded_names(result: dict[str, Any]) -> list[str]:
        """The backend's names for the op, as rank 0 logged it ("all_reduce" for gloo's
        reduce-scatter)."""
        return [f"{r['backend']}:{r['name']}" for r in result["recorded"][0]]

    def busbw_gbps(self, kind: str, payload_bytes: int, time_s: float) -> float:
        return busbw_bytes_per_s(Collective(kind), payload_bytes, self.world_size, time_s) / 1e9

    def factor_latex(self, kind: str) -> str:
        n = self.world_size
        general = FACTOR_LATEX[kind]
        own = general.replace("N", str(n))
        factor = latex_fraction(self.factor(kind), r"\tfrac")
        return (
            rf"\text{{busbw}} = \frac{{S}}{{t}} \times {general}"
            rf" = \frac{{S}}{{t}} \times {own} = \frac{{S}}{{t}} \times {factor}"
        )


SEVERITY = {"equal": 0, "explained": 1, "unexpected": 2}
RESULT = {
    True: N_("what it must be, every element on every rank"),
    False: N_("wrong on some rank"),
}


def verdict(
    summary: dict[str, Any], prediction: CollectivesPrediction, backend: str | None
) -> list[Check]:
    """Per collective, logical and wire bytes per rank against the ring: judged at every size,
    shown at the size that fares worst (the largest when all fare alike). The logical rows
    first, then the wire rows, those with one reason together."""
    results_right = all(r["correct"] for r in summary["results"])
    outcome = check(N_("Results of every collective"), RESULT[results_right], RESULT[True],
                    unit="text")  # fmt: skip
    logical, recorded, wire = [], [], []
    for kind in prediction.kinds:
        results = sorted(
            (r for r in summary["results"] if r["kind"] == kind), key=lambda r: r["payload_bytes"]
        )
        if results:
            logical.append(_worst([_logical_check(prediction, r) for r in results]))
            wire.append(_worst([_wire_check(prediction, r, backend) for r in results]))
        # runs recorded before the Flight Recorder was read have no "recorded"
        if results and all("recorded" in r for r in results):
            recorded.append(_worst([_recorded_check(prediction, r) for r in results]))
    reasons = list(dict.fromkeys((c.status, c.reason) for c in wire))
    wire.sort(key=lambda c: reasons.index((c.status, c.reason)))
    return [outcome, *logical, *recorded, *wire]


def _scope(kind: str, payload_bytes: int) -> str:
    """What a check was measured on, said in the reader's language where the page shows it."""
    return Message(N_("%(kind)s, S = %(size)s"), kind=Message(KIND_NAMES[kind]),
                   size=bytes_human(payload_bytes))  # fmt: skip


def _logical_check(prediction: CollectivesPrediction, result: dict[str, Any]) -> Check:
    kind, size = result["kind"], result["payload_bytes"]
    predicted = prediction.logical_bytes(kind, size)
    measured = max(result["logical_bytes_per_rank"], key=lambda m: abs(m - predicted))
    agrees = prediction.logical_agrees(kind, size, result["logical_bytes_per_rank"])
    return check(N_("Logical bytes / rank"), measured, predicted,
                 scope=_scope(kind, size), agrees=agrees)  # fmt: skip


def _recorded_check(prediction: CollectivesPrediction, result: dict[str, Any]) -> Check:
    """What the backend logged of a clean run (torch's Flight Recorder): one op of S bytes in a
    group of all N ranks, on every rank."""
    size, n = result["payload_bytes"], prediction.world_size
    logged = [sum(r["payload_bytes"] for r in rank) for rank in result["recorded"]]
    one_op_of_all_ranks = all(
        len(rank) == 1 and rank[0]["group_size"] in (n, None) for rank in result["recorded"]
    )
    measured = max(logged, key=lambda m: abs(m - size))
    return check(N_("S in the backend's own log"), measured, size,
                 scope=_scope(result["kind"], size),
                 agrees=one_op_of_all_ranks and all(m == size for m in logged))  # fmt: skip


def _wire_check(
    prediction: CollectivesPrediction, result: dict[str, Any], backend: str | None
) -> Check:
    kind, size = result["kind"], result["payload_bytes"]
    wire = result["wire_bytes_per_rank"]
    measured = statistics.fmean(wire)
    ring = prediction.logical_bytes(kind, size)
    scope = _scope(kind, size)
    if backend == "nccl":
        allowance = gloo_header_allowance_bytes(size, prediction.world_size)
        return wire_check(N_("Wire bytes / rank (mean)"), measured, ring, allowance,
                          backend, scope)  # fmt: skip
    # gloo's own algorithm, rank by rank, is what explains the difference from the ring.
    explained = prediction.wire_agrees(kind, size, wire)
    return check(N_("Wire bytes / rank (mean)"), measured, ring, scope=scope,
                 reason=WIRE_REASONS[kind], explained=explained)  # fmt: skip


def _worst(checks: list[Check]) -> Check:
    return max(reversed(checks), key=lambda c: SEVERITY[c.status])


def chart_points(event: dict[str, Any], prediction: CollectivesPrediction) -> dict[str, Any]:
    first = event["ranks"][0]
    kind, payload = first["kind"], first["payload_bytes"]
    peak = prediction.link_peak(first.get("device", "cpu"), first.get("backend"))
    return {
        "kind": CollectivesPrediction.name(kind),
        "kinds": [CollectivesPrediction.name(k) for k in KINDS],
        "sizes": prediction.sizes,
        "payload_bytes": payload,
        "busbw_gbps": prediction.busbw_gbps(kind, payload, prediction.time_s(event)),
        "peak_busbw_gbps": peak["busbw_gbps"] if peak else None,
        "peak_label": peak["link"] if peak else None,
    }


PAGE = DemoPage(
    demo="collectives",
    slug="collectives",
    title=N_("Collectives on real ranks: bytes and bus bandwidth"),
    teaches=N_(
        "Sweep buffer sizes through all-reduce, reduce-scatter, all-gather, broadcast and "
        "all-to-all; see nccl-tests' bus bandwidth and where gloo sends more than the ring."
    ),
    cards=("ring-all-reduce", "comm-volume-per-layer"),
    params=CollectivesParams,
    labels={
        "max_size_mib": N_("Largest buffer (MiB)"),
        "sizes": N_("Sizes"),
        "iterations": N_("Runs per size"),
    },
    predict=CollectivesPrediction,
    verdict=verdict,
    chart_data=chart_points,
    scripts=("js/demo-collectives.js",),
    passes=N_(
        "bytes (logical and wire) from a counted run of each collective, probes on; time from "
        "a second, clean run, no probe (median of the iterations' clean runs, slowest rank). "
        "On NCCL that time is NCCL's own: the CUDA events the process group records around "
        "the kernel, read from torch's Flight Recorder, as nccl-tests times it; gloo records "
        "no time, so there it is the wall clock around the run. What the backend logged of "
        "each clean run (its name for the op, its group, its sizes) is checked too."
    ),
)
