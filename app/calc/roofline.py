"""The roofline model: arithmetic intensity, the ridge point, and compute- vs memory-bound.

Williams, Waterman & Patterson 2009, "Roofline: An Insightful Visual Performance Model for
Multicore Architectures" (CACM 52(4)): attainable FLOP/s = min(peak, intensity x bandwidth).
The framing, the bounds and the matmul rule follow How To Scale Your Model (Austin et al.
2025, jax-ml/scaling-book), Part 1 "All About Rooflines":

    T_math = FLOPs / peak,  T_comms = bytes / bandwidth
    lower bound on time = max(T_math, T_comms)  (perfect overlap)
    upper bound on time = T_math + T_comms      (no overlap)
    Intensity = FLOPs / bytes; compute-bound iff Intensity > peak / bandwidth

Bytes are HBM traffic: every input read once and every output written once, as if nothing
stayed in cache between operations.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Operation:
    name: str
    flops: float
    bytes_: float
    formula_flops: str  # LaTeX
    formula_bytes: str  # LaTeX

    @property
    def intensity(self) -> float:
        """FLOPs per byte of memory traffic."""
        return self.flops / self.bytes_


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value:g}")


def matmul(b: int, d: int, f: int, dtype_bytes: float) -> Operation:
    """X[B, D] @ Y[D, F] -> Z[B, F]: 2BDF FLOPs; read BD + DF, write BF elements.

    How To Scale Your Model, "Matrix multiplication": Intensity = 2BDF / (2BD + 2DF + 2BF) in
    bf16. (Exactly BF(2D - 1) FLOPs; 2BDF is the convention.)
    """
    _positive(B=b, D=d, F=f, dtype_bytes=dtype_bytes)
    return Operation(
        name="matmul",
        flops=2.0 * b * d * f,
        bytes_=dtype_bytes * (float(b) * d + float(d) * f + float(b) * f),
        formula_flops=r"2BDF",
        formula_bytes=r"\text{bytes}\cdot(BD + DF + BF)",
    )


def elementwise(n: int, dtype_bytes: float) -> Operation:
    """z = x + y over N elements: N FLOPs; read 2N, write N elements."""
    _positive(N=n, dtype_bytes=dtype_bytes)
    return Operation(
        name="elementwise add",
        flops=float(n),
        bytes_=3.0 * n * dtype_bytes,
        formula_flops=r"N",
        formula_bytes=r"\text{bytes}\cdot 3N",
    )


def dot_product(n: int, dtype_bytes: float) -> Operation:
    """x . y over N elements: N multiplies + (N - 1) adds; read 2N, write 1 element.

    How To Scale Your Model, "Example (dot product)": (2N - 1) / (4N + 2) -> 1/2 in bf16.
    """
    _positive(N=n, dtype_bytes=dtype_bytes)
    return Operation(
        name="dot product",
        flops=2.0 * n - 1,
        bytes_=dtype_bytes * (2.0 * n + 1),
        formula_flops=r"2N - 1",
        formula_bytes=r"\text{bytes}\cdot(2N + 1)",
    )


@dataclass(frozen=True)
class Roofline:
    """One operation on one accelerator."""

    intensity: float  # FLOPs / byte
    ridge: float  # peak / bandwidth, FLOPs / byte
    compute_bound: bool
    attainable_flops: float  # min(peak, intensity x bandwidth)
    t_compute_s: float
    t_memory_s: float
    time_lower_s: float  # max: compute and memory overlap perfectly
    time_upper_s: float  # sum: they do not overlap at all


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """The intensity at which the roof's slope meets its ceiling: peak / bandwidth."""
    _positive(peak=peak_flops, bandwidth=bandwidth)
    return peak_flops / bandwidth


def attainable(intensity: float, peak_flops: float, bandwidth: float) -> float:
    """Williams et al. 2009: min(peak, intensity x bandwidth)."""
    return min(peak_flops, intensity * bandwidth)


def roofline(op: Operation, peak_flops: float, bandwidth: float) -> Roofline:
    ridge = ridge_point(peak_flops, bandwidth)
    t_compute = op.flops / peak_flops
    t_memory = op.bytes_ / bandwidth
    return Roofline(
        intensity=op.intensity,
        ridge=ridge,
        compute_bound=op.intensity > ridge,
        attainable_flops=attainable(op.intensity, peak_flops, bandwidth),
        t_compute_s=t_compute,
        t_memory_s=t_memory,
        time_lower_s=max(t_compute, t_memory),
        time_upper_s=t_compute + t_memory,
    )


def matmul_intensity_limit(d: int, f: int, dtype_bytes: float) -> float:
    """The intensity a [B, D] @ [D, F] matmul tends to as B grows: 2DF / (bytes (D + F))."""
    _positive(D=d, F=f, dtype_bytes=dtype_bytes)
    return 2.0 * d * f / (dtype_bytes * (float(d) + f))


def critical_batch(d: int, f: int, dtype_bytes: float, ridge: float) -> float | None:
    """The B at which X[B, D] @ Y[D, F] turns compute-bound, or None if it never does.

    Solve 2BDF / (bytes (BD + DF + BF)) = R for B:
        B (2DF - R bytes (D + F)) = R bytes DF  =>  B = R bytes DF / (2DF - R bytes (D + F)).
    If 2DF <= R bytes (D + F), the intensity's limit (matmul_intensity_limit) is at or below the
    ridge and no batch is large enough. For D, F >> B this is B ~ R bytes / 2, i.e. B ~ R in
    bf16: How To Scale Your Model's "B > 1.97e14 / 8.20e11 = 240" for TPU v5e and 295 for H100.
    """
    _positive(D=d, F=f, dtype_bytes=dtype_bytes, ridge=ridge)
    denominator = 2.0 * d * f - ridge * dtype_bytes * (float(d) + f)
    if denominator <= 0:
        return None
    return ridge * dtype_bytes * d * f / denominator
