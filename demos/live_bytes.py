"""Live tensor bytes op by op, through forward, recompute and backward.

`LiveBytesTrace` is a TorchDispatchMode: every aten op torch runs while it is active, the
recompute of a checkpointed segment and autograd's backward ops included (the engine carries
the mode into backward), passes through it. After each op it notes the storages the op's
outputs live in, and which tracked storages have died since the last op
(`StorageWeakRef.expired()`: the storage's refcount reached zero, so the allocator has the
bytes back). Storages are counted, not tensors, so views (a transpose, autograd's detach of a
saved tensor) cost nothing, as they cost nothing in memory.

A storage the trace has not seen that an op writes in place (an in-place or `out=` op: its
schema's `Tensor(a!)`) existed before the trace: it counts from the start, as `track`'s do,
and `existed` says so. One first seen any other way (a view of a buffer an op's kernel made
inside itself) counts from there. That is how buffers nobody can name from Python (DDP's
gradient buckets, written by its reducer's `mul(out=)`) enter the count. A storage that an op
only reads (a bias passed to addmm) is not counted unless `track` names it. `resizable` names
tensors whose storage the code grows and shrinks in place (FSDP2 resizes its gathered
parameters' storage to 0 and back): their bytes are read again after every op. A DTensor is
counted by its local shard. `scopes` names prefixes of `torch.profiler.record_function` labels
(FSDP2 wraps its all-gathers and reduce-scatters in "FSDP::..." ones, which run as ops the trace
sees even with no profiler on): `born_scope` says which one a storage was born inside.

Why this and not an allocator: torch 2.13 keeps no statistics for the CPU allocator
(`torch.accelerator` memory stats cover accelerators only), and the profiler's memory events
would need a timeline parsed back into tensors. Here every byte is a named tensor, so the peak
can be split term by term. What it cannot see: scratch buffers an op allocates and frees
inside its kernel, and storages that were alive before the trace began unless `track` names
them. Frees are checked between ops, which is when they happen: a storage dies when the
Python or autograd reference to it drops, never halfway through an op.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from demos.memory_probes import local_shard


@dataclass
class _Op:
    label: str
    name: str
    born: list[int] = field(default_factory=list)  # ids of storages first seen in its outputs
    died: list[int] = field(default_factory=list)  # ids found dead just before its outputs
    resized: list[tuple[int, int]] = field(default_factory=list)  # (id, bytes added)


@dataclass(frozen=True)
class LivePeak:
    """The most bytes alive after any one op of a phase, and where that was."""

    bytes_: int
    label: str  # the phase mark in force at the peak (see `LiveBytesTrace.mark`)
    op: str  # the aten op whose outputs brought it there
    index: int = 0  # that op's place in the trace (`LiveBytesTrace.alive_after`)


class LiveBytesTrace(TorchDispatchMode):
    """Bytes of the storages alive after every op, with `exclude`'s storages never counted.

    `track` names tensors that exist before the trace and count from its start (a batch).
    `mark(label)` starts a new phase; `on_gradient(tensor, label)` starts one when backward
    reaches `tensor`, which is how the demo labels the segment backward is working on.
    """

    def __init__(
        self,
        track: Iterable[torch.Tensor] = (),
        exclude: Iterable[torch.Tensor] = (),
        resizable: Iterable[torch.Tensor] = (),
        scopes: Iterable[str] = (),
    ):
        super().__init__()
        self._scope_prefixes = tuple(scopes)
        # One entry per open record_function scope, innermost last: its matching prefix or "".
        # Scopes are context managers, so they close in reverse order (their handles do not
        # keep one Python identity from enter to exit, so the stack is the only key).
        self._open_scopes: list[str] = []
        self._scope_of: dict[int, str] = {}  # storage id -> the prefix it was born inside
        self._excluded = {local_shard(tensor).untyped_storage()._cdata for tensor in exclude}
        self._live: dict[int, tuple[int, StorageWeakRef]] = {}  # StorageImpl address -> id
        self._bytes: list[int] = []  # by id, at birth; an address can be reused once freed
        self._labels: list[str] = []  # by id, the phase it was born in ("start": before)
        self._ops: list[_Op] = []
        self._label = "start"
        start = _Op(self._label, "track")
        for tensor in track:
            self._see(local_shard(tensor).untyped_storage(), start)
        # Held, not weakly referenced: the code that resizes them keeps them anyway.
        self._resizable: list[tuple[int, torch.UntypedStorage]] = []
        for tensor in resizable:
            storage = local_shard(tensor).untyped_storage()
            if storage._cdata not in self._live:
                self._see(storage, start)
                self._resizable.append((len(self._bytes) - 1, storage))
        self._sizes = {id_: storage.nbytes() for id_, storage in self._resizable}
        self._ops.append(start)

    def mark(self, label: str) -> None:
        # What died since the last op (a phase's results whose last holder returned) leaves
        # with the phase it belonged to, not at the next phase's first op.
        end = _Op(self._label, "(end of phase)")
        self._settle(end)
        if end.died or end.resized:
            self._ops.append(end)
        self._label = label

    def on_gradient(self, tensor: torch.Tensor, label: str) -> None:
        # A tensor hook runs when the gradient of `tensor` is ready, before the nodes that
        # consume it: from then on, backward works inside what produced `tensor`.
        tensor.register_hook(lambda grad: self.mark(label))

    def _see(self, storage: torch.UntypedStorage, op: _Op) -> None:
        address = storage._cdata
        if address in self._excluded or address in self._live:
            return
        self._live[address] = (len(self._bytes), StorageWeakRef(storage))
        op.born.append(len(self._bytes))
        self._bytes.append(storage.nbytes())
        self._labels.append(op.label)
        scope = next((prefix for prefix in reversed(self._open_scopes) if prefix), None)
        if scope is not None and op.name != "track":  # not one that existed before
            self._scope_of[len(self._bytes) - 1] = scope

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        written = _written_storages(func, args, kwargs or {})
        out = func(*args, **(kwargs or {}))
        op = _Op(self._label, str(func.overloadpacket.__name__))
        if self._scope_prefixes:
            self._follow_scope(op.name, args)
        self._settle(op)
        start = self._ops[0]
        for value in tree_leaves(out):
            if isinstance(value, torch.Tensor):
                storage = local_shard(value).untyped_storage()
                existed = storage._cdata in written and storage._cdata not in self._live
                self._see(storage, start if existed else op)
        self._ops.append(op)
        return out

    def _follow_scope(self, name: str, args: tuple) -> None:
        if name == "_record_function_enter_new" and args and isinstance(args[0], str):
            prefix = next((p for p in self._scope_prefixes if args[0].startswith(p)), "")
            self._open_scopes.append(prefix)
        elif name == "_record_function_exit" and self._open_scopes:
            self._open_scopes.pop()

    def born_scope(self, id_: int) -> str | None:
        """The `scopes` prefix storage `id_` was born inside, or None."""
        return self._scope_of.get(id_)

    def _settle(self, op: _Op) -> None:
        """Note on `op` the storages that died and the resizable ones that changed size."""
        for address, (id_, ref) in list(self._live.items()):
            if ref.expired():
                del self._live[address]
                op.died.append(id_)
        for id_, storage in self._resizable:
            if (size := storage.nbytes()) != self._sizes[id_]:
                op.resized.append((id_, size - self._sizes[id_]))
                self._sizes[id_] = size

    def existed(self, id_: int) -> bool:
        """Whether storage `id_` was alive before the trace began (tracked or found so)."""
        return self._labels[id_] == "start"

    def born_in(self, id_: int) -> str:
        """The phase mark in force when storage `id_` was born; "start" if it existed."""
        return self._labels[id_]

    def live_ids(self, tensors: Iterable[torch.Tensor]) -> set[int]:
        """The ids of the traced storages that `tensors` live in (to leave them out later)."""
        addresses = {local_shard(tensor).untyped_storage()._cdata for tensor in tensors}
        return {id_ for address, (id_, _) in self._live.items() if address in addresses}

    def timeline(self, leave_out: set[int] = frozenset()) -> list[tuple[str, str, int]]:
        """(label, op, bytes alive after it) for every op, without the `leave_out` ids."""
        return [(op.label, op.name, total) for op, _, total in self._replay(leave_out)]

    def alive_after(self, index: int, leave_out: set[int] = frozenset()) -> dict[int, int]:
        """{id: bytes} of the storages alive after op `index` (a `LivePeak.index`)."""
        for at, (_, alive, _) in enumerate(self._replay(leave_out)):
            if at == index:
                return dict(alive)
        raise IndexError(f"the trace has no op {index}")

    def _replay(self, leave_out: set[int]) -> Iterator[tuple[_Op, dict[int, int], int]]:
        """Each op with {id: bytes} alive after it (one dict, updated in place) and its sum."""
        alive: dict[int, int] = {}
        total = 0
        for op in self._ops:
            for id_ in op.died:
                total -= alive.pop(id_, 0)
            for id_ in op.born:
                if id_ not in leave_out:
                    alive[id_] = self._bytes[id_]
                    total += self._bytes[id_]
            for id_, added in op.resized:
                if id_ in alive:
                    alive[id_] += added
                    total += added
            yield op, alive, total

    def peak(self, labels: Iterable[str], leave_out: set[int] = frozenset()) -> LivePeak:
        """The first op with the most bytes alive among those labelled one of `labels`.

        The replay runs over every op, so bytes born in earlier phases stay counted.
        """
        wanted = set(labels)
        rows = [(index, row) for index, row in enumerate(self.timeline(leave_out))
                if row[0] in wanted]  # fmt: skip
        if not rows:
            raise ValueError(f"no op ran under the labels {sorted(wanted)}")
        index, (label, op, bytes_) = max(rows, key=lambda row: row[1][2])
        return LivePeak(bytes_, label, op, index)


def _written_storages(func: Any, args: tuple, kwargs: dict[str, Any]) -> set[int]:
    """Addresses of the storages `func` writes in place (its schema's `Tensor(a!)` arguments)."""
    written: set[int] = set()
    for index, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = kwargs.get(argument.name) if argument.kwarg_only or index >= len(args) else (
            args[index])  # fmt: skip
        for tensor in tree_leaves(value):
            if isinstance(tensor, torch.Tensor):
                written.add(local_shard(tensor).untyped_storage()._cdata)
    return written


@dataclass
class AllocatorWindow:
    """The CUDA caching allocator over a block, above what was allocated before it; None on
    CPU, where torch keeps no allocator totals."""

    peak_bytes: int | None = None  # the most allocated at once
    net_bytes: int | None = None  # what the block left allocated


@contextmanager
def cuda_allocator_window(device: torch.device) -> Iterator[AllocatorWindow]:
    """The allocator's view, not the trace's: it also counts the parameter gradients, cuBLAS's
    workspace and its own blocks (app.calc.cuda_allocator). It resets the device's peak.

    On CPU nothing is read. The profiler's memory events, the one other record, miss every
    free made on another thread (gloo's, NCCL's watchdog's): in a trial they read a receiving
    rank's DDP construction at twice its buckets. Written for GPU ranks, not yet run on one.
    """
    result = AllocatorWindow()
    if device.type != "cuda":
        yield result
        return
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    yield result
    torch.cuda.synchronize(device)
    result.peak_bytes = torch.cuda.max_memory_allocated(device) - before
    result.net_bytes = torch.cuda.memory_allocated(device) - before
