"""Accelerator presets for the compute and roofline calculators: peak DENSE FLOP/s per dtype,
HBM bandwidth, memory size and the scale-up interconnect, each with where it was read.

Every peak is the dense figure. NVIDIA's datasheets print Tensor Core numbers "with sparsity"
(2:4 structured sparsity doubles them) and add "specifications are one-half lower without
sparsity"; we store the half. "fp32" is the plain (non-Tensor-Core) FP32 rate; "tf32" is the
Tensor Core rate on FP32 inputs; "bf16" stands for BF16 and FP16, which every part here runs at
the same rate. A dtype a part has no published peak for is simply absent.

Bandwidths are decimal (1 TB/s = 10^12 B/s), as the datasheets use. Interconnect figures are
the vendor's per-accelerator total over all links, both directions added (NVLink 900 GB/s on
H100 = 450 GB/s each way).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Dtype = Literal["fp32", "tf32", "bf16", "fp8", "int8"]

# Bytes per element as stored in memory. TF32 is a compute mode: its operands live as FP32.
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp8": 1, "int8": 1}
DTYPE_LABELS: dict[str, str] = {
    "fp32": "FP32 (no Tensor Cores)",
    "tf32": "TF32 (FP32 storage)",
    "bf16": "BF16 / FP16",
    "fp8": "FP8",
    "int8": "INT8",
}

T = 1e12


@dataclass(frozen=True)
class Accelerator:
    slug: str
    name: str
    peak_flops: Mapping[str, float]  # dtype -> dense FLOP/s (OP/s for int8)
    hbm_bytes_per_s: float
    memory_bytes: float  # marketed capacity, decimal bytes
    interconnect: str  # what the scale-up link is
    interconnect_bytes_per_s: float  # per accelerator, all links, both directions
    source: str
    verified: str  # what was checked against a second copy, and what was not


def peak_flops(acc: Accelerator, dtype: str) -> float:
    """Dense peak FLOP/s of `acc` in `dtype`; ValueError if the vendor publishes none."""
    if dtype not in acc.peak_flops:
        have = ", ".join(acc.peak_flops)
        raise ValueError(f"{acc.name} has no published {dtype} peak (it has {have})")
    return acc.peak_flops[dtype]


def ridge_point(acc: Accelerator, dtype: str) -> float:
    """FLOPs per byte of HBM traffic at which `acc` turns compute-bound: peak / bandwidth.

    How To Scale Your Model (Austin et al. 2025), "All About Rooflines": Intensity(Accelerator)
    = peak FLOPs/s / bandwidth bytes/s, e.g. 1.97e14 / 8.2e11 = 240 for TPU v5e bf16, and
    9.89e14 / 3.35e12 = 295 for H100 SXM bf16 (Question 5).
    """
    return peak_flops(acc, dtype) / acc.hbm_bytes_per_s


_NV_SPARSE = "datasheet values are with sparsity; dense = half"

ACCELERATORS: dict[str, Accelerator] = {
    a.slug: a
    for a in (
        Accelerator(
            slug="a100-80gb-sxm",
            name="NVIDIA A100 80GB SXM",
            peak_flops={"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "int8": 624 * T},
            hbm_bytes_per_s=2.039e12,
            memory_bytes=80e9,
            interconnect="NVLink 3 (12 links)",
            interconnect_bytes_per_s=600e9,
            source=(
                "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100/): "
                "TF32 156/312*, BF16 312/624*, INT8 624/1248* TOPS (*with sparsity), "
                "80GB HBM2e at 2,039 GB/s, NVLink 600 GB/s"
            ),
            verified="all figures matched against two copies of the datasheet table",
        ),
        Accelerator(
            slug="h100-sxm",
            name="NVIDIA H100 SXM (80GB)",
            peak_flops={
                "fp32": 66.9 * T,
                "tf32": 494.7 * T,
                "bf16": 989.4 * T,
                "fp8": 1978.9 * T,
                "int8": 1978.9 * T,
            },
            hbm_bytes_per_s=3.35e12,
            memory_bytes=80e9,
            interconnect="NVLink 4 (18 links)",
            interconnect_bytes_per_s=900e9,
            source=(
                "NVIDIA H100 datasheet (nvidia.com/en-us/data-center/h100/): TF32 989*, "
                "BF16 1,979*, FP8 3,958*, INT8 3,958* (*with sparsity), 3.35 TB/s, NVLink "
                f"900 GB/s; {_NV_SPARSE}; exact dense 989.4 from the Hopper whitepaper table"
            ),
            verified=(
                "datasheet table and the whitepaper's dense 989.4 / 494.7 / 1978.9 matched; "
                "How To Scale Your Model uses 9.89e14 and 3.35e12"
            ),
        ),
        Accelerator(
            slug="h100-pcie",
            name="NVIDIA H100 PCIe (80GB)",
            peak_flops={
                "fp32": 51 * T,
                "tf32": 378 * T,
                "bf16": 756.5 * T,
                "fp8": 1513 * T,
                "int8": 1513 * T,
            },
            hbm_bytes_per_s=2.0e12,
            memory_bytes=80e9,
            interconnect="NVLink bridge (pairs of cards)",
            interconnect_bytes_per_s=600e9,
            source=(
                "NVIDIA H100 datasheet, PCIe column: TF32 756*, BF16 1,513*, FP8 3,026*, "
                f"INT8 3,026* (*with sparsity), 80GB HBM2e at 2,000 GB/s, NVLink 600 GB/s; "
                f"{_NV_SPARSE}"
            ),
            verified=(
                "datasheet table matched (copy at hpctech.co.jp); the H100 PCIe product brief "
                "says 'greater than 2,000 GB/s', so 2.0e12 is a floor"
            ),
        ),
        Accelerator(
            slug="h200",
            name="NVIDIA H200 SXM (141GB)",
            peak_flops={
                "fp32": 66.9 * T,
                "tf32": 494.7 * T,
                "bf16": 989.4 * T,
                "fp8": 1978.9 * T,
                "int8": 1978.9 * T,
            },
            hbm_bytes_per_s=4.8e12,
            memory_bytes=141e9,
            interconnect="NVLink 4 (18 links)",
            interconnect_bytes_per_s=900e9,
            source=(
                "NVIDIA H200 page (nvidia.com/en-us/data-center/h200/): 141GB HBM3e at "
                "4.8 TB/s, NVLink 900 GB/s; same Hopper Tensor Cores as H100 SXM (BF16 1,979*, "
                f"FP8 3,958* with sparsity); {_NV_SPARSE}"
            ),
            verified="141 GB and 4.8 TB/s matched in several copies; compute taken as H100 SXM",
        ),
        Accelerator(
            slug="b200",
            name="NVIDIA B200 (HGX, 1000 W)",
            peak_flops={
                "fp32": 75 * T,
                "tf32": 1100 * T,
                "bf16": 2250 * T,
                "fp8": 4500 * T,
                "int8": 4500 * T,
            },
            hbm_bytes_per_s=7.7e12,
            memory_bytes=180e9,
            interconnect="NVLink 5 (18 links)",
            interconnect_bytes_per_s=1.8e12,
            source=(
                "NVIDIA's GB200 NVL72 / HGX B200 specification table, HGX B200 column, per GPU: "
                "FP8/FP6 9 PFLOPS*, FP16/BF16 4.5 PFLOPS*, TF32 2.2 PFLOPS* (*with sparsity), "
                "FP32 75 TFLOPS, FP64 37 TFLOPS, 180 GB HBM3e at 7.7 TB/s, NVLink 1.8 TB/s; "
                "dense = half the sparse figures. All from one table: the launch figures "
                "(FP32 80 TFLOPS, 8 TB/s, and DGX B200's 64 TB/s for 8 GPUs) were for the "
                "first announced part"
            ),
            verified=(
                "NOT read on NVIDIA's own page (not in the searchable copies): the table was "
                "read in two copies, one citing NVIDIA's Blackwell datasheet PDF (page 8), "
                "both giving 180 GB and 7.7 TB/s for HGX B200. pytorch/ao PR #4002 reads a "
                "7680-bit bus at 3996 MHz from the driver: 7.67 TB/s. MLPerf Inference v6.0 "
                "system files name 'B200-SXM-180GB'. Older secondary copies (glennklockwood.com, "
                "stas00/ml-engineering) give the launch figures, FP32 80 and 8 TB/s"
            ),
        ),
        Accelerator(
            slug="mi300x",
            name="AMD Instinct MI300X",
            peak_flops={
                "fp32": 163.4 * T,
                "tf32": 653.7 * T,
                "bf16": 1307.4 * T,
                "fp8": 2614.9 * T,
                "int8": 2614.9 * T,
            },
            hbm_bytes_per_s=5.3e12,
            memory_bytes=192e9,
            interconnect="Infinity Fabric (7 links x 128 GB/s)",
            interconnect_bytes_per_s=896e9,
            source=(
                "AMD Instinct MI300X datasheet (amd.com/en/products/accelerators/instinct/mi300/"
                "mi300x.html): FP16/BF16 1,307.4, FP8 2,614.9, TF32 653.7, FP32 matrix 163.4 "
                "TFLOPS dense; 192 GB HBM3 at 5.3 TB/s; Infinity Fabric 896 GB/s peak"
            ),
            verified=(
                "NOT checked against AMD's own datasheet (not in the searchable copies). "
                "Secondary copies agree on 192 GB, 5.3 TB/s, 896 GB/s Infinity Fabric and about "
                "1.3 PFLOPS FP16 / 2.6 PFLOPS FP8 dense; TF32 653.7 and FP32 163.4 NOT "
                "cross-checked"
            ),
        ),
        Accelerator(
            slug="tpu-v5e",
            name="Google TPU v5e",
            peak_flops={"bf16": 197 * T, "int8": 393 * T},
            hbm_bytes_per_s=819e9,
            memory_bytes=16e9,
            interconnect="ICI (4 ports, 2D torus)",
            interconnect_bytes_per_s=400e9,
            source=(
                "Google Cloud TPU v5e docs (cloud.google.com/tpu/docs/v5e): 197 TFLOPs bf16, "
                "393 TOPs int8 per chip, 16 GB HBM2 at 819 GBps, bidirectional ICI 400 GBps "
                "per chip"
            ),
            verified=(
                "read from the Cloud docs; How To Scale Your Model uses 1.97e14, 3.94e14 int8 "
                "and 8.1e11-8.2e11 B/s"
            ),
        ),
    )
}


# torch.cuda.get_device_name() (the driver's name, as nvidia-smi prints it) -> preset. A name
# that is not here (H100 NVL, A100 PCIe, ...) has no preset: its link is not assumed.
DEVICE_NAMES: dict[str, str] = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA H200": "h200",
    "NVIDIA A100-SXM4-80GB": "a100-80gb-sxm",
    "NVIDIA B200": "b200",
    "AMD Instinct MI300X": "mi300x",
}


def accelerator_for_device(device_name: str) -> Accelerator | None:
    """The preset of a device torch names, or None where there is none."""
    slug = DEVICE_NAMES.get(device_name)
    return None if slug is None else ACCELERATORS[slug]


def link_busbw_peak_bytes_per_s(acc: Accelerator) -> float:
    """The bus bandwidth (nccl-tests' busbw) the scale-up link allows one rank: in a ring each
    rank sends and receives at once, so one direction is the bottleneck, half the vendor's
    both-directions figure (H100 SXM: 900 GB/s NVLink -> 450 GB/s)."""
    return acc.interconnect_bytes_per_s / 2
