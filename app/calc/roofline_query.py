"""The roofline calculator's inputs: one flat model shared by the page, the shareable URL, the
JSON API and the command line, and its full answer as plain data."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.calc.hardware import ACCELERATORS, DTYPE_BYTES, DTYPE_LABELS, peak_flops
from app.calc.messages import N_, Message, sentence, words_of
from app.calc.query_config import QUERY_CONFIG
from app.calc.roofline import (
    Operation,
    attainable,
    critical_batch,
    dot_product,
    elementwise,
    matmul,
    matmul_intensity_limit,
    roofline,
)

LABELS = {
    "op": "Operation",
    "b": "Batch B (tokens)",
    "d": "D",
    "f": "F",
    "n": "Elements N",
    "gpu": "Accelerator",
    "dtype": "Precision",
}

OPERATIONS = {
    "matmul": "Matmul X[B, D] · Y[D, F]",
    "elementwise": "Elementwise add of N elements",
    "dot": "Dot product of two N-vectors",
}
SWEEP_B = (1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536)

GpuName = Literal[tuple(ACCELERATORS)]  # type: ignore[valid-type]
DtypeName = Literal[tuple(DTYPE_LABELS)]  # type: ignore[valid-type]


class RooflineQuery(BaseModel):
    """One operation on one accelerator. B, D, F are used by the matmul, N by the others."""

    model_config = QUERY_CONFIG

    op: Literal[tuple(OPERATIONS)] = "matmul"  # type: ignore[valid-type]
    b: Annotated[int, Field(ge=1, le=10_000_000, description="rows of X: tokens")] = 256
    d: Annotated[int, Field(ge=1, le=1_000_000, description="contracted dimension")] = 8192
    f: Annotated[int, Field(ge=1, le=1_000_000, description="columns of Y")] = 8192
    n: Annotated[int, Field(ge=1, le=10**12, description="elements (elementwise, dot)")] = 2**24
    gpu: GpuName = "h100-sxm"
    dtype: DtypeName = "bf16"

    @model_validator(mode="after")
    def _consistent(self) -> RooflineQuery:
        acc = ACCELERATORS[self.gpu]
        if self.dtype not in acc.peak_flops:
            have = ", ".join(DTYPE_LABELS[d] for d in acc.peak_flops)
            template = N_("The %(gpu)s has no published %(dtype)s peak; pick %(have)s")
            raise ValueError(Message(template, gpu=acc.name, dtype=self.dtype, have=have))
        try:
            roofline_result(self)
        except (ValueError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(sentence(words_of(exc))) from None
        return self

    def operation(self) -> Operation:
        size = DTYPE_BYTES[self.dtype]
        if self.op == "matmul":
            return matmul(self.b, self.d, self.f, size)
        if self.op == "elementwise":
            return elementwise(self.n, size)
        return dot_product(self.n, size)


def roofline_result(query: RooflineQuery) -> dict[str, Any]:
    """The calculator's full answer as plain data: what the API returns and `--json` prints."""
    acc = ACCELERATORS[query.gpu]
    peak = peak_flops(acc, query.dtype)
    bw = acc.hbm_bytes_per_s
    size = DTYPE_BYTES[query.dtype]
    op = query.operation()
    r = roofline(op, peak, bw)
    matmul_part: dict[str, Any] = {"critical_batch": None, "critical_batch_approx": None,
                                   "intensity_limit": None, "sweep": []}  # fmt: skip
    if query.op == "matmul":
        sweep = []
        for b in SWEEP_B:
            i = matmul(b, query.d, query.f, size).intensity
            sweep.append({"b": b, "intensity": i, "attainable_flops": attainable(i, peak, bw)})
        matmul_part = {
            "critical_batch": critical_batch(query.d, query.f, size, r.ridge),
            "critical_batch_approx": r.ridge * size / 2,
            "intensity_limit": matmul_intensity_limit(query.d, query.f, size),
            "sweep": sweep,
        }
    return {
        "operation": OPERATIONS[query.op],
        "gpu": acc.name,
        "dtype": query.dtype,
        "dtype_bytes": size,
        "peak_flops": peak,
        "hbm_bytes_per_s": bw,
        "flops": op.flops,
        "bytes": op.bytes_,
        "intensity": r.intensity,
        "ridge": r.ridge,
        "bound": "compute" if r.compute_bound else "memory",
        "attainable_flops": r.attainable_flops,
        "fraction_of_peak": r.attainable_flops / peak,
        "t_compute_s": r.t_compute_s,
        "t_memory_s": r.t_memory_s,
        "time_lower_s": r.time_lower_s,
        "time_upper_s": r.time_upper_s,
        **matmul_part,
        "ridges": [
            {"gpu": a.name, "ridge": a.peak_flops[query.dtype] / a.hbm_bytes_per_s}
            for a in ACCELERATORS.values()
            if query.dtype in a.peak_flops
        ],
    }
