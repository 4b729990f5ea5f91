"""Roofline arithmetic: intensities by hand, ridge points, bounds, and the matmul's critical B."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.hardware import ACCELERATORS
from app.calc.hardware import ridge_point as accelerator_ridge
from app.calc.roofline import (
    critical_batch,
    dot_product,
    elementwise,
    matmul,
    matmul_intensity_limit,
    ridge_point,
    roofline,
)

H100_BF16 = 989.4e12
H100_BW = 3.35e12


def test_matmul_by_hand() -> None:
    # [4, 8] @ [8, 16] in bf16: 2*4*8*16 = 1024 FLOPs; 2*(32 + 128 + 64) = 448 bytes.
    op = matmul(4, 8, 16, 2)
    assert (op.flops, op.bytes_) == (1024, 448)
    assert op.intensity == pytest.approx(1024 / 448)


def test_elementwise_and_dot_product_by_hand() -> None:
    add = elementwise(1000, 2)  # 1000 FLOPs; read 2000 + write 1000 elements of 2 bytes
    assert (add.flops, add.bytes_) == (1000, 6000)
    dot = dot_product(1000, 2)  # How To Scale Your Model: (2N - 1) / (4N + 2)
    assert dot.intensity == pytest.approx(1999 / 4002)
    assert dot_product(10**9, 2).intensity == pytest.approx(0.5, rel=1e-6)


def test_h100_ridge_point() -> None:
    # 989.4e12 / 3.35e12 = 295.3 FLOP/byte ("All About Rooflines", Question 5: 295).
    assert ridge_point(H100_BF16, H100_BW) == pytest.approx(295.34, abs=0.01)
    assert accelerator_ridge(ACCELERATORS["h100-sxm"], "bf16") == ridge_point(H100_BF16, H100_BW)


def test_verdict_attainable_and_bounds() -> None:
    memory = roofline(elementwise(10**8, 2), H100_BF16, H100_BW)
    assert not memory.compute_bound
    assert memory.attainable_flops == pytest.approx(H100_BW / 6)  # intensity 1/6
    assert memory.time_lower_s == pytest.approx(6e8 / H100_BW)
    big = roofline(matmul(8192, 8192, 8192, 2), H100_BF16, H100_BW)
    assert big.compute_bound and big.attainable_flops == H100_BF16
    assert big.time_lower_s == pytest.approx(2 * 8192**3 / H100_BF16)


def test_matmul_turns_compute_bound_near_the_ridge_for_large_d_f() -> None:
    ridge = ridge_point(H100_BF16, H100_BW)
    b = critical_batch(10**6, 10**6, 2, ridge)
    assert b == pytest.approx(ridge, rel=0.001)  # ≈ ridge x bytes / 2 = ridge in bf16
    assert roofline(matmul(int(b) + 1, 10**6, 10**6, 2), H100_BF16, H100_BW).compute_bound
    assert not roofline(matmul(int(b) - 1, 10**6, 10**6, 2), H100_BF16, H100_BW).compute_bound
    # TPU v5e, the chapter's "B > 240": 197e12 / 819e9 = 240.5.
    v5e = accelerator_ridge(ACCELERATORS["tpu-v5e"], "bf16")
    assert critical_batch(10**6, 10**6, 2, v5e) == pytest.approx(240.5, abs=0.5)
    # int8 (1 byte) halves the batch for the same intensity ratio (Question 1: 480 / 2).
    assert critical_batch(10**6, 10**6, 1, 480) == pytest.approx(240, rel=0.001)


def test_exact_critical_batch_by_hand() -> None:
    # D = F = 4096, bf16, ridge 295: B = 295*2*4096^2 / (2*4096^2 - 295*2*8192) = 9898557440 /
    # (33554432 - 4833280) = 344.64...
    b = critical_batch(4096, 4096, 2, 295)
    assert b == pytest.approx(295 * 2 * 4096**2 / (2 * 4096**2 - 295 * 2 * 8192))
    assert matmul(b, 4096, 4096, 2).intensity == pytest.approx(295)


def test_small_matmul_never_turns_compute_bound() -> None:
    # D = F = 256 in bf16: the intensity tends to 2*256*256 / (2*512) = 128 < 295.
    assert matmul_intensity_limit(256, 256, 2) == 128
    assert critical_batch(256, 256, 2, 295.3) is None


dims = st.integers(1, 100_000)


@given(b=st.integers(1, 10**6), d=dims, f=dims, size=st.sampled_from([1, 2, 4]))
def test_matmul_intensity_grows_with_b_and_saturates(b: int, d: int, f: int, size: int) -> None:
    now, more = matmul(b, d, f, size).intensity, matmul(2 * b, d, f, size).intensity
    assert more > now
    assert more < matmul_intensity_limit(d, f, size)


@given(
    flops_exp=st.floats(0, 18), bytes_exp=st.floats(0, 14), gpu=st.sampled_from(list(ACCELERATORS))
)
def test_time_bounds_max_below_sum(flops_exp: float, bytes_exp: float, gpu: str) -> None:
    acc = ACCELERATORS[gpu]
    op = matmul(1, 1, 1, 2)
    op = type(op)("x", 10**flops_exp, 10**bytes_exp, "", "")
    r = roofline(op, acc.peak_flops["bf16"], acc.hbm_bytes_per_s)
    assert r.time_lower_s <= r.time_upper_s <= 2 * r.time_lower_s
    assert r.attainable_flops <= acc.peak_flops["bf16"]
    assert r.compute_bound == (r.t_compute_s > r.t_memory_s)


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError, match="B must be positive"):
        matmul(0, 8, 8, 2)
