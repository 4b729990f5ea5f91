"""Memory meters a demo reads on each rank: its model states in bytes of distinct storage, the
CUDA caching allocator's view, and the bytes autograd saves for backward.

Storages, not elements, because views share them (each function says where that matters).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def local_shard(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's shard on this rank, which holds its storage; any other tensor as it is.

    The attribute, not `to_local()`: that is an autograd op, and demos.live_bytes calls this
    inside a dispatch mode, on every op's outputs.
    """
    return getattr(tensor, "_local_tensor", tensor)


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind these tensors (a DTensor by its local shard).

    Storages, not elements: a view into a bigger buffer (FSDP2's padded shards and its
    reduce-scatter output, DDP's gradient buckets) holds the whole buffer, counted once.
    """
    seen: set[int] = set()
    total = 0
    for tensor in tensors:
        storage = local_shard(tensor).untyped_storage()
        if storage.nbytes() and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            total += storage.nbytes()
    return total


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    """Every tensor an optimizer keeps in its state on this rank (Adam: m, v and step).

    ZeroRedundancyOptimizer keeps this rank's share in its inner optimizer (`.optim`).
    """
    inner = getattr(optimizer, "optim", optimizer)
    return [
        value
        for state in inner.state.values()
        for value in state.values()
        if isinstance(value, torch.Tensor)
    ]


def model_state_bytes(module: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """This rank's parameters, gradients and optimizer states, in bytes of distinct storage."""
    params = list(module.parameters())
    return {
        "params": storage_bytes(params),
        "grads": storage_bytes(p.grad for p in params if p.grad is not None),
        "optimizer": storage_bytes(optimizer_tensors(optimizer)),
    }


def cuda_memory(device: torch.device) -> dict[str, int] | None:
    """The CUDA caching allocator's view on this rank; None on CPU (torch has no CPU stats).

    `max_allocated` is the peak since the caller last reset it (reset_peak_memory_stats);
    `reserved` is what the allocator holds from the driver, freed blocks included, which is
    nearer to what nvidia-smi shows. Untested on GPU as of 2026-11-25.
    """
    if device.type != "cuda":
        return None
    # Kernels still queued may yet allocate or free: read the allocator once they have run.
    torch.cuda.synchronize(device)
    return {
        "allocated": torch.cuda.memory_allocated(device),
        "max_allocated": torch.cuda.max_memory_allocated(device),
        "reserved": torch.cuda.memory_reserved(device),
    }


class SavedActivationMeter:
    """Bytes autograd saves for backward while active: distinct storages, parameters left out.

    A `saved_tensors_hooks` pack hook sees every tensor an op saves (feasibility §8: exact and
    deterministic). Several saves of one storage (a ReLU output that the next linear also
    saves, a view) count once; the storages of `exclude` (the parameters, and views of them
    such as a linear's transposed weight) count not at all. Under non-reentrant
    `torch.utils.checkpoint` the hook sees what the checkpoint keeps (its inputs), not the
    tensors rebuilt during backward.
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = ()) -> None:
        self._excluded = {tensor.untyped_storage().data_ptr() for tensor in exclude}
        self._storages: dict[int, int] = {}
        self.saves = 0
        self._hooks: torch.autograd.graph.saved_tensors_hooks | None = None

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        self.saves += 1
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in self._excluded:
            self._storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @staticmethod
    def _unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    @property
    def bytes_(self) -> int:
        return sum(self._storages.values())

    def __enter__(self) -> SavedActivationMeter:
        self._storages.clear()
        self.saves = 0
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._hooks is not None:
            self._hooks.__exit__(*exc)
            self._hooks = None
