"""Generated questions on the roofline calculator (app.calc.roofline via roofline_query).

Every answer comes from `roofline_result`, the calculator's full answer, and the worked steps
are the rows the calculator page writes (app.worked.roofline), so a question is
graded and explained by exactly what /calculators/roofline shows for the same inputs.
Accelerators and precisions are drawn as indexes into the tuples below; inputs a question
does not draw take the calculator's defaults (RooflineQuery: H100 SXM, bf16, 8192 x 8192).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.calc.hardware import ACCELERATORS
from app.calc.roofline_query import RooflineQuery, roofline_result
from app.i18n import gettext
from app.quiz.generators.solution import Solution
from app.quiz.generators.words import DTYPE_WORDS, say
from app.worked.roofline import roofline_formulas

# Index -> name; YAML items draw the index.
GPU_ORDER = ("h100-sxm", "a100-80gb-sxm", "h200", "b200", "mi300x", "tpu-v5e")
DTYPE_ORDER = ("bf16", "fp8", "fp32", "tf32", "int8")


def _query(inputs: Mapping[str, float], op: str = "matmul") -> RooflineQuery:
    fields: dict[str, Any] = {"op": op}
    for name in ("b", "d", "f", "n"):
        if name in inputs:
            fields[name] = int(inputs[name])
    if "gpu" in inputs:
        fields["gpu"] = GPU_ORDER[int(inputs["gpu"])]
    if "dtype" in inputs:
        fields["dtype"] = DTYPE_ORDER[int(inputs["dtype"])]
    return RooflineQuery(**fields)


def _fields(query: RooflineQuery, r: dict[str, Any]) -> dict[str, str]:
    width = r["dtype_bytes"]
    return {
        # Plain digits: these go inside $...$, where a thousands comma renders as "8, 192".
        "b": str(query.b),
        "d": str(query.d),
        "f": str(query.f),
        "n": str(query.n),
        "gpu": ACCELERATORS[query.gpu].name,
        "dtype": say(DTYPE_WORDS, query.dtype),
        # Two messages rather than ngettext: every width here is 1, 2 or 4 bytes.
        "dtype_bytes": (gettext("{n} bytes") if width > 1 else gettext("{n} byte")).format(n=width),
        "peak": f"{r['peak_flops'] / 1e12:,.4g} TFLOP/s",
        "bandwidth": f"{r['hbm_bytes_per_s'] / 1e12:,.4g} TB/s",
    }


def _rows(query: RooflineQuery, r: dict[str, Any], *names: str) -> list[str]:
    """The page's formula rows named `names`, each as its symbolic then substituted LaTeX."""
    rows = {what: (symbolic, substituted) for what, symbolic, substituted, _ in
            roofline_formulas(query, r)}  # fmt: skip
    return [latex for name in names for latex in rows[name]]


def _solution(inputs: Mapping[str, float], key: str, rows: tuple[str, ...], op: str) -> Solution:
    query = _query(inputs, op)
    r = roofline_result(query)
    if r[key] is None:
        raise ValueError(f"{key} is undefined for {dict(inputs)}: pick other choices")
    return Solution(
        answer=r[key], prompt_fields=_fields(query, r), steps_latex=_rows(query, r, *rows)
    )


def matmul_intensity(inputs: Mapping[str, float]) -> Solution:
    """FLOPs per byte of X[B, D] @ Y[D, F]: 2BDF / (bytes (BD + DF + BF))."""
    rows = ("FLOPs", "Bytes moved", "Arithmetic intensity")
    return _solution(inputs, "intensity", rows, "matmul")


def ridge_point(inputs: Mapping[str, float]) -> Solution:
    """The accelerator's ridge point: dense peak / HBM bandwidth, FLOPs per byte."""
    return _solution(inputs, "ridge", ("Ridge point",), "matmul")


def critical_batch(inputs: Mapping[str, float]) -> Solution:
    """Tokens B at which X[B, D] @ Y[D, F] turns compute-bound (exact, not B ~ ridge)."""
    return _solution(inputs, "critical_batch", ("Ridge point", "Compute-bound from"), "matmul")


def matmul_attainable_tflops(inputs: Mapping[str, float]) -> Solution:
    """Attainable TFLOP/s of the matmul: min(peak, intensity x bandwidth)."""
    solution = _solution(
        inputs,
        "attainable_flops",
        ("Arithmetic intensity", "Ridge point", "Attainable FLOP/s"),
        "matmul",
    )
    return Solution(
        answer=solution.answer / 1e12,
        prompt_fields=solution.prompt_fields,
        steps_latex=solution.steps_latex,
    )


GENERATORS: dict[str, Callable[[Mapping[str, float]], Solution]] = {
    "roofline.matmul_intensity": matmul_intensity,
    "roofline.ridge_point": ridge_point,
    "roofline.critical_batch": critical_batch,
    "roofline.matmul_attainable_tflops": matmul_attainable_tflops,
}
