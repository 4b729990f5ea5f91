r"""Links between GPUs, and the alpha-beta model of how long a message takes over one.

A message of B bytes sent in k sequential steps over a link of per-direction bandwidth beta and
per-step latency alpha takes t = k * alpha + B / beta (Hockney's model; for ring collectives
Patarasuk & Yuan 2009, and Thakur, Rabenseifner & Gropp 2005, "Optimization of collective
communication operations in MPICH", Section 2).

Bandwidths are per GPU and per direction: a ring sends and receives at once, so the time is
bytes sent / one direction's bandwidth. Network presets assume one NIC per GPU, as on a DGX H100
(8 GPUs, 8 ConnectX-7 400 Gb/s InfiniBand ports).

Latencies alpha are NCCL's own cost model: `hwLat` in NVIDIA/nccl src/graph/tuning.cc, the Ring
algorithm with the Simple protocol (used for large messages): 3.4 us per step over NVLink,
5.7 us over PCIe, 14 us over the network.
"""

from __future__ import annotations

from dataclasses import dataclass

NCCL_LATENCY_SOURCE = "NCCL src/graph/tuning.cc, hwLat, Ring/Simple"


@dataclass(frozen=True)
class Link:
    slug: str
    name: str
    bandwidth_bytes_per_s: float  # per GPU, per direction
    latency_s: float  # alpha, per ring step
    scope: str  # "intra-node" or "inter-node"
    source: str


def _gbs(gb_per_s: float) -> float:
    return gb_per_s * 1e9


LINKS: dict[str, Link] = {
    link.slug: link
    for link in (
        Link(
            "nvlink4",
            "NVLink 4 (H100 SXM)",
            _gbs(450),
            3.4e-6,
            "intra-node",
            "NVIDIA H100 datasheet: NVLink 900 GB/s (18 links x 50 GB/s, both directions) "
            f"= 450 GB/s per direction; alpha: {NCCL_LATENCY_SOURCE} NVLink 3.4 us",
        ),
        Link(
            "nvlink3",
            "NVLink 3 (A100 SXM)",
            _gbs(300),
            3.4e-6,
            "intra-node",
            "NVIDIA A100 datasheet: NVLink 600 GB/s (12 links x 50 GB/s, both directions) "
            f"= 300 GB/s per direction; alpha: {NCCL_LATENCY_SOURCE} NVLink 3.4 us",
        ),
        Link(
            "pcie5",
            "PCIe 5.0 x16",
            _gbs(64),
            5.7e-6,
            "intra-node",
            "PCI-SIG PCIe 5.0: 32 GT/s x 16 lanes, 128b/130b = 63 GB/s per direction "
            f"(~64 GB/s); alpha: {NCCL_LATENCY_SOURCE} PCI 5.7 us",
        ),
        Link(
            "pcie4",
            "PCIe 4.0 x16",
            _gbs(32),
            5.7e-6,
            "intra-node",
            "PCI-SIG PCIe 4.0: 16 GT/s x 16 lanes, 128b/130b = 31.5 GB/s per direction "
            f"(~32 GB/s); alpha: {NCCL_LATENCY_SOURCE} PCI 5.7 us",
        ),
        Link(
            "ib-ndr",
            "InfiniBand NDR 400 Gb/s (1 NIC per GPU)",
            _gbs(50),
            14e-6,
            "inter-node",
            "NVIDIA ConnectX-7 / Quantum-2 NDR: 400 Gb/s = 50 GB/s per direction per port; "
            f"alpha: {NCCL_LATENCY_SOURCE} NET 14 us",
        ),
        Link(
            "ib-hdr",
            "InfiniBand HDR 200 Gb/s (1 NIC per GPU)",
            _gbs(25),
            14e-6,
            "inter-node",
            "NVIDIA ConnectX-6 / Quantum HDR: 200 Gb/s = 25 GB/s per direction per port; "
            f"alpha: {NCCL_LATENCY_SOURCE} NET 14 us",
        ),
        Link(
            "roce-400g",
            "RoCE 400GbE (1 NIC per GPU)",
            _gbs(50),
            14e-6,
            "inter-node",
            "IEEE 802.3 400GbE: 400 Gb/s = 50 GB/s per direction per port; "
            f"alpha: {NCCL_LATENCY_SOURCE} NET 14 us",
        ),
    )
}


def alpha_beta_time(sent_bytes: float, steps: int, link: Link) -> float:
    """Seconds to send `sent_bytes` in `steps` sequential steps: steps * alpha + bytes / beta."""
    if sent_bytes < 0 or steps < 0:
        raise ValueError("bytes and steps cannot be negative")
    if sent_bytes == 0:
        return 0.0
    return steps * link.latency_s + sent_bytes / link.bandwidth_bytes_per_s
