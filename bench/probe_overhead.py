"""Probe overhead: a DDP step of the ZeRO demo's model, plain, timed clean and fully probed.

Two gloo ranks (spawned here) train the demo's default TinyGPT under DDP. Steps rotate between
three kinds, so drift in the machine's load hits each alike:

- plain: the step with no window at all;
- timed: the demo's clean timed step (`timed_step`: the window the page's times come from);
- counted: the demo's counted step (collective counter, wire meters per phase, model-state
  accounting), which gives the page's bytes and was what the page timed before.

Prints the median step time of each (slowest rank) and each one's overhead over plain (the
median of the rounds' ratios); the timed step's must stay within 5 %. The counted one's is for
reference: it is what the page's times carried before they came from clean steps.

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
KINDS = ("plain", "timed", "counted")


def rank_main(
    rank: int, port: int, steps: int, model: dict, results: multiprocessing.Queue
) -> None:
    import torch
    import torch.distributed as dist

    from demos.probes import RankInfo
    from demos.specs.zero_stages import ZeroStagesParams
    from demos.zero_stages import batch_for, build, counted_step, plain_step, timed_step

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(60))
    info = RankInfo(rank, WORLD_SIZE, "gloo", torch.device("cpu"))
    params = ZeroStagesParams(**model)
    model, holder, optimizer, _ = build("ddp", info, params)
    tokens = batch_for(params, info, 0)
    step_of = {
        "plain": lambda: plain_step(model, optimizer, tokens),
        "timed": lambda: timed_step(model, optimizer, tokens, info),
        "counted": lambda: counted_step(model, holder, optimizer, tokens, info),
    }
    for _ in range(WARMUP_STEPS):
        for step in step_of.values():
            step()
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for round_ in range(steps):
        # Each kind takes each place in the rotation equally often: no kind always follows
        # the counted step, whose garbage and cold caches the next step would pay for.
        for kind in KINDS[round_ % 3 :] + KINDS[: round_ % 3]:
            dist.barrier()
            start = time.perf_counter()
            step_of[kind]()
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
    # Per round, the slowest rank's time of each kind; the overhead is the median of the
    # rounds' ratios, so a burst of load from other processes hits both sides of a ratio.
    slowest = {
        kind: [max(per_rank[r][kind][i] for r in per_rank) for i in range(args.steps)]
        for kind in KINDS
    }
    shown = ", ".join(f"{k}={v}" for k, v in model.items()) or "defaults"
    print(
        f"DDP step of the ZeRO demo's model ({shown}), {WORLD_SIZE} gloo ranks, {args.steps} each"
    )
    for kind in KINDS:
        ratios = [t / p for t, p in zip(slowest[kind], slowest["plain"], strict=True)]
        overhead = 100 * (statistics.median(ratios) - 1)
        median_ms = statistics.median(slowest[kind]) * 1000
        print(f"{kind:8} step  median {median_ms:7.2f} ms  {overhead:+6.1f} % vs plain")


if __name__ == "__main__":
    main()
