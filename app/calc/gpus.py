"""GPU memory capacities, in bytes, as the driver reports them.

Each figure is the total nvidia-smi prints ("used / total MiB", ECC on, the data-centre
default), times 2**20. That is what a training run can actually fill, less the CUDA context
(the `overhead_bytes` term of app.calc.training), and it is smaller than the marketing
figure: the "80GB" H100 reports 81,559 MiB = 85.5e9 B = 79.6 GiB, the "141GB" H200 reports
143,771 MiB. Every `source` says which number it is and where it was read.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.units import MIB

_SMI = "nvidia-smi total memory as printed in public logs (e.g. GitHub issue threads)"


@dataclass(frozen=True)
class Gpu:
    slug: str
    name: str
    memory_bytes: int
    source: str


def _from_smi(slug: str, name: str, mib: int, spec: str) -> Gpu:
    return Gpu(
        slug=slug,
        name=name,
        memory_bytes=mib * MIB,
        source=f"{mib:,} MiB: {_SMI}; spec sheet says {spec}",
    )


GPUS: dict[str, Gpu] = {
    gpu.slug: gpu
    for gpu in (
        _from_smi("a100-40gb", "NVIDIA A100 40GB (SXM4/PCIe)", 40_960, "40 GB HBM2"),
        _from_smi("a100-80gb", "NVIDIA A100 80GB (SXM4)", 81_920, "80 GB HBM2e"),
        _from_smi("h100-80gb", "NVIDIA H100 80GB HBM3 (SXM5)", 81_559, "80 GB HBM3"),
        _from_smi("h200", "NVIDIA H200 (SXM / NVL)", 143_771, "141 GB HBM3e"),
        _from_smi(
            "b200",
            "NVIDIA B200",
            183_359,
            "192 GB HBM3e (DGX B200: 1,440 GB for 8 GPUs = 180 GB each)",
        ),
        _from_smi("rtx-4090", "NVIDIA GeForce RTX 4090", 24_564, "24 GB GDDR6X"),
        _from_smi("l40s", "NVIDIA L40S", 46_068, "48 GB GDDR6 with ECC"),
        _from_smi("v100-32gb", "NVIDIA Tesla V100-SXM2 32GB", 32_510, "32 GB HBM2 (ECC on)"),
    )
}
