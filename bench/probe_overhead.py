"""Probe overhead: a DDP step of the ZeRO demo's model, timed with and without the probes.

Two gloo ranks (spawned here) train the demo's default TinyGPT under DDP. Steps alternate
between the plain step and the demo's measured step (collective counter, wire meters per
phase, model-state accounting), so drift in the machine's load hits both alike. Prints the
median step time of each (slowest rank) and the overhead in percent; the issue asks for <= 10 %.

Run from the repository root:  .venv/bin/python bench/probe_overhead.py [--steps 40]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

# This checkout's code, also in the spawned ranks (they inherit PYTHONPATH).
ROOT = str(Path(__file__).resolve().parent.parent)
sys.path.insert(0, ROOT)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))

WORLD_SIZE = 2
WARMUP_STEPS = 5


def rank_main(
    rank: int, port: int, steps: int, model: dict, results: multiprocessing.Queue
) -> None:
    import torch
    import torch.distributed as dist

    from demos.probes import RankInfo
    from demos.specs.zero_stages import ZeroStagesParams
    from demos.zero_stages import batch_for, build, measured_step, plain_step

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(60))
    info = RankInfo(rank, WORLD_SIZE, "gloo", torch.device("cpu"))
    params = ZeroStagesParams(**model)
    model, holder, optimizer = build("ddp", info, params)
    tokens = batch_for(params, info, 0)
    for _ in range(WARMUP_STEPS):
        plain_step(model, optimizer, tokens)
        measured_step(model, holder, optimizer, tokens, info)
    times: dict[str, list[float]] = {"plain": [], "probed": []}
    for _ in range(steps):
        for kind in ("plain", "probed"):
            dist.barrier()
            start = time.perf_counter()
            if kind == "plain":
                plain_step(model, optimizer, tokens)
            else:
                measured_step(model, holder, optimizer, tokens, info)
            times[kind].append(time.perf_counter() - start)
    results.put((rank, times))
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="steps of each kind (default 40)")
    for name in ("width", "layers", "vocab", "seq_len", "batch"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, help="as on the demo page")
    args = parser.parse_args()
    model = {
        name: getattr(args, name)
        for name in ("width", "layers", "vocab", "seq_len", "batch")
        if getattr(args, name) is not None
    }
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ranks = [
        context.Process(target=rank_main, args=(r, port, args.steps, model, results))
        for r in range(WORLD_SIZE)
    ]
    for process in ranks:
        process.start()
    per_rank = dict(results.get(timeout=600) for _ in ranks)
    for process in ranks:
        process.join(60)
    medians = {}
    for kind in ("plain", "probed"):
        slowest = [max(per_rank[r][kind][i] for r in per_rank) for i in range(args.steps)]
        medians[kind] = statistics.median(slowest)
    overhead = 100 * (medians["probed"] - medians["plain"]) / medians["plain"]
    shown = ", ".join(f"{k}={v}" for k, v in model.items()) or "defaults"
    print(
        f"DDP step of the ZeRO demo's model ({shown}), {WORLD_SIZE} gloo ranks, {args.steps} each"
    )
    print(f"plain step   median {medians['plain'] * 1000:.2f} ms")
    print(f"probed step  median {medians['probed'] * 1000:.2f} ms")
    print(f"probe overhead {overhead:+.1f} %")


if __name__ == "__main__":
    main()
