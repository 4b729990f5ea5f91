"""How big a training checkpoint is, and how long it takes to write.

A checkpoint holds what a resumed run needs to continue bit for bit: the weights, the fp32
master copy where the optimizer keeps one, and the optimizer's state; not the gradients (they
are rebuilt by the next backward pass) and not the activations. Per parameter:

    bytes = weights + master + states x state bytes

    weights   2 (bf16/fp16), 4 (fp32) or 1 (fp8)
    master    4 when the optimizer keeps an fp32 copy beside low-precision weights, else 0
    states    Adam 2 (first and second moments m and v), SGD with momentum 1, none 0

Mixed-precision Adam with bf16 weights, an fp32 master copy and fp32 moments saves
2 + 4 + 4 + 4 = 14 bytes per parameter. ZeRO's well-known 16 bytes (Rajbhandari et al. 2020,
arXiv:1910.02054, Section 3.1) is what training *holds* in memory and adds the 2-byte
gradients, which a checkpoint does not save; a run whose weights are fp32 (FSDP keeping
fp32 sharded parameters and casting to bf16 only for compute) saves 4 + 4 + 4 = 12.

Writing: N writers each write an equal shard (replicated state deduplicated: each byte once)
at an aggregate bandwidth B, so the write takes total / B. An asynchronous save (PyTorch DCP
`async_save`, Megatron-Core's async `torch_dist` save) blocks training only while each GPU
copies its shard to host memory: shard / host bandwidth; the write to storage then runs in
the background.

Published anchor: Narayanan et al. 2021 (arXiv:2104.04473), Section 5.10: the 1-trillion-
parameter model (1008.0 billion, Table 1) "has a checkpoint of size 13.8 terabytes"; saves
reach 273 GB/s. 1.008e12 x 14 B = 14.1 TB is within 3% of it (pinned in the tests).
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
OPTIMIZER_STATES = {"adam": 2, "sgd": 1, "none": 0}  # sgd: one momentum buffer
MASTER_BYTES = 4  # the fp32 master copy


@dataclass(frozen=True)
class CheckpointBytes:
    """A checkpoint's bytes, by what they hold."""

    params: float
    weights: float
    master: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.master + self.optimizer

    @property
    def per_param(self) -> float:
        return self.total / self.params


def checkpoint_bytes(
    params: float,
    weights_dtype: str = "bf16",
    master_weights: bool = True,
    optimizer: str = "adam",
    optimizer_dtype: str = "fp32",
) -> CheckpointBytes:
    """What a checkpoint of `params` parameters holds (module docstring)."""
    if params <= 0:
        raise ValueError("the parameter count must be positive")
    if weights_dtype not in DTYPE_BYTES or optimizer_dtype not in DTYPE_BYTES:
        raise ValueError(f"dtypes are one of {sorted(DTYPE_BYTES)}")
    if optimizer not in OPTIMIZER_STATES:
        raise ValueError(f"the optimizer is one of {sorted(OPTIMIZER_STATES)}")
    states = OPTIMIZER_STATES[optimizer]
    return CheckpointBytes(
        params=params,
        weights=params * DTYPE_BYTES[weights_dtype],
        master=params * MASTER_BYTES if master_weights else 0.0,
        optimizer=params * states * DTYPE_BYTES[optimizer_dtype],
    )


def bytes_per_writer(total_bytes: float, writers: int) -> float:
    """An equal shard per writer, replicated state written once."""
    if total_bytes < 0 or writers < 1:
        raise ValueError("the bytes must be non-negative and the writers at least 1")
    return total_bytes / writers


def write_time_s(total_bytes: float, aggregate_bandwidth_bytes_per_s: float) -> float:
    """total / B: the time to write the whole checkpoint at the aggregate bandwidth."""
    if total_bytes < 0 or aggregate_bandwidth_bytes_per_s <= 0:
        raise ValueError("the bytes must be non-negative and the bandwidth positive")
    return total_bytes / aggregate_bandwidth_bytes_per_s


def async_blocking_s(shard_bytes: float, host_bandwidth_bytes_per_s: float) -> float:
    """shard / host bandwidth: the device-to-host copy an asynchronous save waits for."""
    if shard_bytes < 0 or host_bandwidth_bytes_per_s <= 0:
        raise ValueError("the bytes must be non-negative and the host bandwidth positive")
    return shard_bytes / host_bandwidth_bytes_per_s
