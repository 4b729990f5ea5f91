"""Accelerator presets: dense (not sparse) peaks, bandwidths and ridge points as published."""

from __future__ import annotations

import pytest

from app.calc.hardware import (
    ACCELERATORS,
    DTYPE_BYTES,
    accelerator_for_device,
    link_busbw_peak_bytes_per_s,
    peak_flops,
    ridge_point,
)


@pytest.mark.parametrize(
    ("slug", "dtype", "tflops"),
    [
        ("a100-80gb-sxm", "bf16", 312),  # A100 datasheet: 312 / 624* (*sparsity)
        ("a100-80gb-sxm", "tf32", 156),
        ("h100-sxm", "bf16", 989.4),  # H100 datasheet 1,979* -> 989.4 dense (whitepaper)
        ("h100-sxm", "fp8", 1978.9),
        ("h100-pcie", "bf16", 756.5),  # 1,513* / 2
        ("h200", "bf16", 989.4),
        ("b200", "bf16", 2250),  # HGX B200: 36 PFLOPS* for 8 GPUs -> 4.5 / 2
        ("mi300x", "bf16", 1307.4),  # AMD MI300X datasheet, dense
        ("tpu-v5e", "bf16", 197),  # Cloud TPU v5e docs
        ("tpu-v5e", "int8", 393),
    ],
)
def test_dense_peaks_match_the_datasheets(slug: str, dtype: str, tflops: float) -> None:
    assert peak_flops(ACCELERATORS[slug], dtype) == pytest.approx(tflops * 1e12)


@pytest.mark.parametrize(
    ("slug", "tb_per_s", "gb"),
    [("a100-80gb-sxm", 2.039, 80), ("h100-sxm", 3.35, 80), ("h200", 4.8, 141),
     ("mi300x", 5.3, 192), ("tpu-v5e", 0.819, 16)],
)  # fmt: skip
def test_bandwidth_and_memory(slug: str, tb_per_s: float, gb: float) -> None:
    acc = ACCELERATORS[slug]
    assert acc.hbm_bytes_per_s == pytest.approx(tb_per_s * 1e12)
    assert acc.memory_bytes == pytest.approx(gb * 1e9)


def test_ridge_points_match_how_to_scale_your_model() -> None:
    # "All About Rooflines", Question 5: 9.89e14 / 3.35e12 = 295 for H100 SXM bf16.
    assert ridge_point(ACCELERATORS["h100-sxm"], "bf16") == pytest.approx(295, abs=0.5)
    # The chapter's "about 240" for TPU v5e (it divides by 8.2e11; the docs say 819 GB/s).
    assert ridge_point(ACCELERATORS["tpu-v5e"], "bf16") == pytest.approx(240.5, abs=0.1)


def test_every_preset_has_a_source_and_sane_numbers() -> None:
    for acc in ACCELERATORS.values():
        assert acc.source and acc.verified and acc.interconnect
        assert "bf16" in acc.peak_flops
        assert set(acc.peak_flops) <= set(DTYPE_BYTES)
        # Lower precision is never slower than bf16 on the same part.
        for low in ("fp8", "int8"):
            if low in acc.peak_flops:
                assert acc.peak_flops[low] >= acc.peak_flops["bf16"]


def test_missing_dtype_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="TPU v5e has no published fp8 peak"):
        peak_flops(ACCELERATORS["tpu-v5e"], "fp8")


def test_a_device_torch_names_finds_its_preset_and_an_unknown_one_none() -> None:
    assert accelerator_for_device("NVIDIA H100 80GB HBM3") is ACCELERATORS["h100-sxm"]
    assert accelerator_for_device("NVIDIA H200") is ACCELERATORS["h200"]
    assert accelerator_for_device("NVIDIA H100 NVL") is None  # no preset: no link assumed
    assert accelerator_for_device("cpu") is None


def test_the_links_busbw_peak_is_one_direction_of_the_datasheet_figure() -> None:
    # H100 SXM: NVLink 900 GB/s over both directions, 450 GB/s each way
    assert link_busbw_peak_bytes_per_s(ACCELERATORS["h100-sxm"]) == 450e9
    assert link_busbw_peak_bytes_per_s(ACCELERATORS["a100-80gb-sxm"]) == 300e9
