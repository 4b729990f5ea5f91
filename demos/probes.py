"""Meters a demo wraps around its steps: what torch issued, what hit the wire, how long.

Bytes and time come from different windows. The collective counter intercepts every ATen op
in Python, which doubled the ZeRO demo's default DDP step (docs/benchmarks.md, "Probe
overhead"), so a `CountedStep` (probes on) gives a step's bytes and never its time, and a
`TimedStep` (probes off, and refusing to open under one) gives its time and never its bytes.

Two byte meters, because they answer different questions (feasibility §2):

- `CollectiveCounter` (a TorchDispatchMode) sees every c10d / _c10d_functional op torch issues
  on this thread, from Python or from C++ (DDP's reducer), and records its PAYLOAD exactly. From
  the payload, `app.calc.comm` gives the LOGICAL bytes NCCL's ring would send for that op.
- `wire_bytes_written()` reads `wchar` from /proc/self/io: every byte this process handed to
  write()/send(), gloo's threads included. That is the MEASURED traffic. It also counts logging
  and control messages, so nothing else may write while a window is open.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from app.calc.comm import Collective, ring_bytes_per_rank
from demos import flight_recorder

PROC_SELF_IO = Path("/proc/self/io")
_RING_KINDS = frozenset(kind.value for kind in Collective)


@dataclass(frozen=True)
class RankInfo:
    """Who this process is in the job: what every demo and meter needs to know."""

    rank: int
    world_size: int
    backend: str
    device: torch.device

    def sync(self) -> None:
        """Wait for queued device work, so a window's end time covers it (NCCL is async)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def wire_bytes_written() -> int:
    """Bytes this process has written to files and sockets so far (Linux `wchar`)."""
    for line in PROC_SELF_IO.read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise RuntimeError(f"no wchar line in {PROC_SELF_IO}")


class WireMeter:
    """Bytes this process wrote between `__enter__` and `__exit__`."""

    def __init__(self) -> None:
        self._start = 0
        self.bytes_ = 0

    def __enter__(self) -> WireMeter:
        self._start = wire_bytes_written()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bytes_ = wire_bytes_written() - self._start


@dataclass(frozen=True)
class CollectiveCall:
    """One communication op torch issued on this rank."""

    phase: str
    kind: str
    payload_bytes: int
    group_size: int
    logical_bytes: float | None  # None: app.calc has no ring formula for this kind


# op name -> (kind, argument that carries the payload as the nccl-tests S, multiplier source)
# c10d ops pass (output, input) for the *_base_ variants; S follows app/calc/comm.py:
# all_gather S = full output, reduce_scatter S = full input, all_to_all S = one rank's buffer.
_C10D_OPS: dict[str, tuple[str, str]] = {
    "allreduce_": ("all_reduce", "tensors"),
    "allreduce_coalesced_": ("all_reduce", "tensors"),
    "allgather_": ("all_gather", "output_tensors"),
    "_allgather_base_": ("all_gather", "output_tensor"),
    "allgather_coalesced_": ("all_gather", "output_lists"),
    "allgather_into_tensor_coalesced_": ("all_gather", "outputs"),
    "reduce_scatter_": ("reduce_scatter", "input_tensors"),
    "_reduce_scatter_base_": ("reduce_scatter", "input_tensor"),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", "inputs"),
    "alltoall_": ("all_to_all", "input_tensors"),
    "alltoall_base_": ("all_to_all", "input"),
    "broadcast_": ("broadcast", "tensors"),
    "reduce_": ("reduce", "tensors"),
    "gather_": ("gather", "input_tensors"),
    "scatter_": ("scatter", "output_tensors"),
    "send": ("send", "tensors"),
    "recv_": ("recv", "tensors"),
    "recv_any_source_": ("recv", "tensors"),
    "barrier": ("barrier", ""),
    "monitored_barrier_": ("barrier", ""),
}

# Functional collectives take a local input; all_gather's S is that input times the group size.
_FUNCTIONAL_OPS: dict[str, tuple[str, str]] = {
    "all_reduce": ("all_reduce", "input"),
    "all_reduce_": ("all_reduce", "input"),
    "all_reduce_coalesced": ("all_reduce", "inputs"),
    "all_reduce_coalesced_": ("all_reduce", "inputs"),
    "all_gather_into_tensor": ("all_gather", "input"),
    "all_gather_into_tensor_out": ("all_gather", "input"),
    "all_gather_into_tensor_coalesced": ("all_gather", "inputs"),
    "reduce_scatter_tensor": ("reduce_scatter", "input"),
    "reduce_scatter_tensor_out": ("reduce_scatter", "input"),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", "inputs"),
    "all_to_all_single": ("all_to_all", "input"),
    "broadcast": ("broadcast", "input"),
    "broadcast_": ("broadcast", "input"),
    "isend": ("send", "tensor"),
    "irecv": ("recv", "tensor"),
}


def _tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(_tensor_bytes(item) for item in value)
    return 0


def _arguments(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    names = [argument.name for argument in func._schema.arguments]
    bound = dict(zip(names, args, strict=False))
    bound.update(kwargs)
    return bound


def _c10d_group_size(bound: dict[str, Any]) -> int:
    return dist.ProcessGroup.unbox(bound["process_group"]).size()


def _functional_group_size(bound: dict[str, Any]) -> int:
    if "group_size" in bound:
        return int(bound["group_size"])
    return dist.distributed_c10d._resolve_process_group(bound["group_name"]).size()


def logical_bytes(kind: str, payload_bytes: int, group_size: int) -> float | None:
    """What NCCL's ring would send from this rank for one such op (a send sends its payload)."""
    if kind in ("gather", "scatter"):
        # c10d's gather_/scatter_ carry one rank's piece; nccl-tests sizes S as the whole
        # gathered (scattered) buffer, N pieces, and the bus factor is (N-1)/N of that.
        payload_bytes *= group_size
    if kind in _RING_KINDS:
        return ring_bytes_per_rank(Collective(kind), payload_bytes, group_size)
    if kind == "send":
        return float(payload_bytes)
    if kind in ("recv", "barrier"):
        return 0.0
    return None


def describe_op(func: Any, args: tuple, kwargs: dict, phase: str) -> list[CollectiveCall]:
    """The communication calls one dispatched op stands for; empty for anything else."""
    namespace = func.namespace
    name = func._overloadpacket.__name__
    if namespace == "c10d" and name in _C10D_OPS:
        kind, payload_arg = _C10D_OPS[name]
        bound = _arguments(func, args, kwargs)
        payload = _tensor_bytes(bound[payload_arg]) if payload_arg else 0
        size = _c10d_group_size(bound)
    elif namespace == "_c10d_functional" and name == "batch_p2p_ops":
        bound = _arguments(func, args, kwargs)
        size = _functional_group_size(bound)
        calls = []
        for op, tensor in zip(bound["op_list"], bound["tensors"], strict=True):
            kind = "send" if "send" in op else "recv"
            payload = _tensor_bytes(tensor)
            calls.append(
                CollectiveCall(phase, kind, payload, size, logical_bytes(kind, payload, size))
            )
        return calls
    elif namespace == "_c10d_functional" and name in _FUNCTIONAL_OPS:
        kind, payload_arg = _FUNCTIONAL_OPS[name]
        bound = _arguments(func, args, kwargs)
        size = _functional_group_size(bound)
        payload = _tensor_bytes(bound[payload_arg])
        if kind == "all_gather":
            payload *= size
    else:
        return []
    return [CollectiveCall(phase, kind, payload, size, logical_bytes(kind, payload, size))]


class CollectiveCounter(TorchDispatchMode):
    """Records every collective and p2p op issued on this thread while the mode is active.

    Ops run inside `__torch_dispatch__` with the mode switched off, so an op that is built from
    other ops is counted once, as what the caller asked for.
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[CollectiveCall] = []
        self._phase = "step"

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        previous, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = previous

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.calls.extend(describe_op(func, args, kwargs, self._phase))
        return out

    def selected(self, phase: str | None = None) -> list[CollectiveCall]:
        return [call for call in self.calls if phase is None or call.phase == phase]

    def payload_bytes(self, phase: str | None = None) -> int:
        return sum(call.payload_bytes for call in self.selected(phase))

    def logical_bytes(self, phase: str | None = None) -> float | None:
        values = [call.logical_bytes for call in self.selected(phase)]
        return None if None in values else float(sum(values))

    def by_kind(self, phase: str | None = None) -> list[dict[str, Any]]:
        """One row per kind, in the order torch first issued it."""
        rows: dict[str, dict[str, Any]] = {}
        for call in self.selected(phase):
            row = rows.setdefault(
                call.kind,
                {"kind": call.kind, "count": 0, "payload_bytes": 0, "logical_bytes": 0.0},
            )
            row["count"] += 1
            row["payload_bytes"] += call.payload_bytes
            if row["logical_bytes"] is not None and call.logical_bytes is not None:
                row["logical_bytes"] += call.logical_bytes
            else:
                row["logical_bytes"] = None
        return list(rows.values())


class CountedStep:
    """One counted window: the collectives torch issued and the bytes this process wrote.

    Its time is not kept: the counter slows every op, so a step's time comes from a
    `TimedStep` of its own. Python warnings raised inside the window are held back and shown
    after it closes, because printing them would add their bytes to the window's wire count.
    """

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self._sync = sync
        self.counter = CollectiveCounter()
        self.wire_bytes = 0
        self._wire_start = 0
        self._held: list[warnings.WarningMessage] = []
        self._catch = warnings.catch_warnings(record=True)

    def __enter__(self) -> CountedStep:
        self._held = self._catch.__enter__()
        self._wire_start = wire_bytes_written()
        self.counter.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            # NCCL is async: wait, so the window's wire count covers the work it issued.
            if self._sync is not None:
                self._sync()
        finally:
            self.counter.__exit__(*exc)
            self.wire_bytes = wire_bytes_written() - self._wire_start
            self._catch.__exit__(*exc)
        for held in self._held:
            warnings.showwarning(held.message, held.category, held.filename, held.lineno)

    def as_dict(self, rank: int) -> dict[str, Any]:
        """This rank's bytes for a `measurement` event's row (its time comes from a TimedStep)."""
        return {
            "rank": rank,
            "payload_bytes": self.counter.payload_bytes(),
            "logical_bytes": self.counter.logical_bytes(),
            "wire_bytes": self.wire_bytes,
            "collectives": self.counter.by_kind(),
        }


class TimedStep:
    """One clean window: wall time, and the span in which the backend's own records of its
    collectives fall (demos.flight_recorder, read after the step). It refuses to open while a
    dispatch mode (a probe) is active, so no time a page shows can include the counter's
    cost."""

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self._sync = sync
        self.time_s = 0.0
        self._start_ns = 0
        self.recorded = flight_recorder.Window()

    def __enter__(self) -> TimedStep:
        mode = _get_current_dispatch_mode()
        if mode is not None:
            raise RuntimeError(f"a timed window opened under {type(mode).__name__}: time it clean")
        self.recorded.__enter__()
        self._start_ns = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sync is not None:
            self._sync()  # NCCL is async: the end time must cover the queued work
        self.time_s = (time.perf_counter_ns() - self._start_ns) / 1e9
        self.recorded.__exit__(*exc)


def count_then_time(
    operation: Callable[[], object],
    rank: RankInfo,
    prepare: Callable[[], object] = lambda: None,
) -> tuple[CountedStep, TimedStep]:
    """Run one operation twice, each time refilled by `prepare` and started together:
    counted first (bytes), then clean (time). The operation's result is the clean run's."""
    windows: list[Any] = [CountedStep(rank.sync), TimedStep(rank.sync)]
    for window in windows:
        prepare()
        rank.sync()
        dist.barrier()  # start together: time the operation, not a peer's lateness
        with window:
            operation()
    return windows[0], windows[1]
