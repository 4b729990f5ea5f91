"""Each collective as the process group itself logged it: torch's Flight Recorder.

The collective counter (demos.probes) sees what torch was asked to do. The Flight Recorder is
what the backend (ProcessGroupNCCL, ProcessGroupGloo) logged as it did it: the collective's
name as the backend runs it, its process group, its input and output sizes and dtypes, and, on
NCCL with TORCH_NCCL_ENABLE_TIMING=1, its duration: the time between two CUDA events the
process group records on the NCCL stream around the kernel, read by the watchdog thread when
the work retires (torch 2.13, FlightRecorderDetail.hpp `retire_id`). That duration is the
collective's own time on the GPU, free of Python, of the launch and of the probes: what
nccl-tests times.

Gloo records sizes but no duration (its time_discovered_* stay 0, feasibility §2), and logs a
reduce-scatter as `gloo:all_reduce`, because an all-reduce is what it runs.

The recorder is a ring buffer the process keeps anyway, so reading it costs nothing while a
step runs: a window notes the wall clock at its ends (the recorder stamps each entry with the
same clock, c10::getTime) and its entries are read once afterwards. A read copies the whole
buffer (bench/flight_recorder_read.py: about 1.6 ms for 256 entries, 14 ms for 2,000, on a
2-core machine), so the buffer is kept at 256 entries: a collectives row of 10 runs leaves 40
(counted, clean and a barrier before each).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

# Read when the first process group is made: set them before init_process_group.
ENV = {"TORCH_FR_BUFFER_SIZE": "256", "TORCH_NCCL_ENABLE_TIMING": "1"}
# The watchdog retires finished work every 100 ms or so; a duration appears only then.
RETIRE_WAIT_S = 5.0
POLL_S = 0.02

# Backend's name for a collective -> app.calc.comm's kind (or send/recv/barrier), after the
# "nccl:" or "gloo:" prefix and before any " 0->1" peer suffix. Names from torch 2.13's
# flight_recorder/components/types.py COLLECTIVES and P2P.
KINDS: dict[str, str] = {
    "all_reduce": "all_reduce",
    "allreduce_coalesced": "all_reduce",
    "reduce_scatter": "reduce_scatter",
    "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_single": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "REDUCE_SCATTER_coalesced": "reduce_scatter",
    "all_gather": "all_gather",
    "_all_gather_base": "all_gather",
    "all_gather_single": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "ALLGATHER_coalesced": "all_gather",
    "broadcast": "broadcast",
    "_broadcast_oop": "broadcast",
    "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all",
    "send": "send",
    "recv": "recv",
    "recvAnySource": "recv",
    "barrier": "barrier",
    "all_reduce_barrier": "barrier",
}
DTYPE_BYTES = {
    "Float": 4,
    "Double": 8,
    "Half": 2,
    "BFloat16": 2,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
    "Long": 8,
    "Int": 4,
    "Short": 2,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
}


def enable() -> None:
    """Ask for the recorder and NCCL's timing events, unless the user set them otherwise."""
    for name, value in ENV.items():
        os.environ.setdefault(name, value)


@dataclass(frozen=True)
class Recorded:
    """One collective or p2p op as the backend logged it on this rank."""

    record_id: int
    backend: str  # nccl, gloo
    name: str  # the backend's own name: _reduce_scatter_base, all_reduce, send 0->1
    kind: str | None  # app.calc.comm's kind, send, recv or barrier; None if unknown
    group: str  # the process group's name
    group_size: int | None  # None when the dump does not list the group's ranks
    input_bytes: int
    output_bytes: int
    created_ns: int  # wall clock, as time.time_ns()
    duration_s: float | None  # NCCL's CUDA events; None on gloo or without timing
    retired: bool

    @property
    def payload_bytes(self) -> int:
        """S as nccl-tests means it: the larger of input and output (the reduce-scatter's
        input, the all-gather's output, the one buffer of the others)."""
        return max(self.input_bytes, self.output_bytes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "name": self.name,
            "kind": self.kind,
            "group": self.group,
            "group_size": self.group_size,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "payload_bytes": self.payload_bytes,
            "duration_s": self.duration_s,
        }


def _bytes(sizes: Iterable[Iterable[int]], dtypes: Iterable[str]) -> int:
    return sum(
        math.prod(int(extent) for extent in shape) * DTYPE_BYTES.get(dtype, 0)
        for shape, dtype in zip(sizes, dtypes, strict=False)
    )


def _group_sizes(trace: dict[str, Any]) -> dict[str, int]:
    """Process-group name -> its number of ranks, from the dump's pg_config."""
    sizes = {}
    for name, config in (trace.get("pg_config") or {}).items():
        ranks = config.get("ranks", "[]")
        ranks = json.loads(ranks) if isinstance(ranks, str) else ranks
        if ranks:
            sizes[name] = len(ranks)
    return sizes


def parse(trace: dict[str, Any]) -> list[Recorded]:
    """The entries of one Flight Recorder JSON dump (torch 2.13 keys, FlightRecorder.hpp)."""
    group_sizes = _group_sizes(trace)
    records = []
    for entry in trace.get("entries", []):
        backend, _, full_name = entry["profiling_name"].partition(":")
        name = full_name.split(" ")[0]
        group = entry["process_group"][0]
        duration_ms = entry.get("duration_ms")
        records.append(
            Recorded(
                record_id=int(entry["record_id"]),
                backend=backend,
                name=full_name,
                kind=KINDS.get(name),
                group=group,
                group_size=group_sizes.get(group),
                input_bytes=_bytes(entry["input_sizes"], entry["input_dtypes"]),
                output_bytes=_bytes(entry["output_sizes"], entry["output_dtypes"]),
                created_ns=int(entry["time_created_ns"]),
                duration_s=None if duration_ms is None else float(duration_ms) / 1e3,
                retired=bool(entry.get("retired")),
            )
        )
    return records


def dump(backend: str) -> dict[str, Any]:
    """This process's recorder as JSON: NCCL keeps its own (CUDA-event) one."""
    import torch

    c10d = torch._C._distributed_c10d
    dumper = getattr(c10d, "_dump_nccl_trace_json", None) if backend == "nccl" else None
    return json.loads((dumper or c10d._dump_fr_trace_json)())


class Window:
    """The collectives this process issued between `__enter__` and `__exit__`, as the backend
    recorded them: entries are matched by their creation time, so nothing is read while the
    window is open."""

    def __init__(self) -> None:
        self.start_ns = 0
        self.end_ns = 0

    def __enter__(self) -> Window:
        self.start_ns = time.time_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end_ns = time.time_ns()

    def holds(self, record: Recorded) -> bool:
        return self.start_ns <= record.created_ns <= self.end_ns


def group_size(name: str) -> int | None:
    """The size of this process's group of that name (gloo's dump lists no group's ranks)."""
    import torch.distributed as dist

    try:
        return dist.distributed_c10d._resolve_process_group(name).size()
    except (KeyError, ValueError, RuntimeError):
        return None


def read(
    windows: list[Window],
    backend: str,
    timed: bool,
    dumper: Callable[[str], dict[str, Any]] = dump,
    wait_s: float = RETIRE_WAIT_S,
) -> list[list[Recorded]]:
    """Each window's records, barriers left out. With `timed` (NCCL with timing on), wait
    until every one has retired with its duration, up to `wait_s`; one still without a
    duration then keeps None, and its time falls back to the caller's wall clock."""
    deadline = time.monotonic() + wait_s
    while True:
        records = parse(dumper(backend))
        chosen = [
            [r for r in records if window.holds(r) and r.kind != "barrier"] for window in windows
        ]
        settled = all(r.duration_s is not None for group in chosen for r in group)
        if not timed or settled or time.monotonic() >= deadline:
            return [
                [r if r.group_size else replace(r, group_size=group_size(r.group)) for r in group]
                for group in chosen
            ]
        time.sleep(POLL_S)


def durations_s(runs: list[list[Recorded]]) -> list[float] | None:
    """Each clean run's time as the backend measured it, or None where any run lacks one
    (gloo, NCCL without timing, a duration not yet read)."""
    times = []
    for records in runs:
        durations = [record.duration_s for record in records]
        if not durations or None in durations:
            return None
        times.append(sum(d for d in durations if d is not None))
    return times


def timed(backend: str) -> bool:
    """Whether this process's backend records durations: NCCL with its timing events on."""
    return backend == "nccl" and os.environ.get("TORCH_NCCL_ENABLE_TIMING") == "1"
