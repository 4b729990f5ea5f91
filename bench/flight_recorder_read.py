"""What one read of torch's Flight Recorder costs (demos/flight_recorder.py).

A read copies the recorder's whole ring buffer, so its cost grows with the buffer, not with
what a window needs. One gloo rank fills a buffer of each size with small all-reduces, then
times the two dumps torch offers: the pickle without stack traces (what the demos read) and
the JSON one. Prints the median of --reads reads, in ms and µs per entry.

Run from the repository root:  .venv/bin/python bench/flight_recorder_read.py [--sizes 256 2000]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(entries: int, reads: int) -> None:
    """One buffer size, in this process (the size is read when the process group is made)."""
    import pickle

    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    buffer = torch.ones(1024)
    for _ in range(entries + 10):
        dist.all_reduce(buffer)
    c10d = torch._C._distributed_c10d
    dumps = {
        "pickle, no stacks": lambda: pickle.loads(c10d._dump_fr_trace(True, False, False)),  # noqa: S301
        "json": lambda: c10d._dump_fr_trace_json(),
    }
    for name, read in dumps.items():
        times = []
        for _ in range(reads):
            start = time.perf_counter()
            read()
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        print(f"{entries:>6} entries  {name:<18} {median * 1e3:7.1f} ms  "
              f"{median / entries * 1e6:5.1f} µs/entry")  # fmt: skip
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 2000])
    parser.add_argument("--reads", type=int, default=9)
    parser.add_argument("--entries", type=int, help=argparse.SUPPRESS)  # one size, in a child
    args = parser.parse_args()
    if args.entries:
        measure(args.entries, args.reads)
        return 0
    for size in args.sizes:
        env = {**os.environ, "TORCH_FR_BUFFER_SIZE": str(size), "PYTHONPATH": str(ROOT)}
        command = [sys.executable, __file__, "--entries", str(size), "--reads", str(args.reads)]
        subprocess.run(command, env=env, check=True, stderr=subprocess.DEVNULL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
