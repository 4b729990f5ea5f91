"""Which collectives gloo runs on CUDA tensors, tried one by one, against demos/specs/devices.py.

The worker refuses a demo on gloo with --device cuda when it needs a collective that
`GLOO_ON_CUDA` marks False, and runs it otherwise. That table was read from torch 2.13's
binaries, not run. This script runs each collective, in the form the demos call it, on two
gloo ranks whose tensors live on the GPU (two ranks may share one GPU), checks the values that
came back, and prints what ran beside what the table says. Exits 1 where they disagree.

Each collective runs in a fresh pair of processes: one that a rank refuses while its peer waits
would otherwise leave the pair's next collectives out of step.

  python bench/gloo_cuda_ops.py                   # CUDA tensors (needs a GPU)
  python bench/gloo_cuda_ops.py --device cpu      # the same calls on CPU tensors: all run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root

from bench.flight_recorder_read import free_port  # noqa: E402
from demos.collective_calls import all_gather_single, reduce_scatter_single  # noqa: E402
from demos.specs.devices import GLOO_ON_CUDA  # noqa: E402

WORLD_SIZE = 2
ELEMENTS = 1024
TIMEOUT_S = 20.0


def _run(kind: str, rank: int, device: torch.device) -> bool:
    """Issue one collective of `kind` on this rank; whether this rank holds what it must."""
    n, r = WORLD_SIZE, rank
    mine = torch.full((ELEMENTS,), float(r + 1), device=device)
    ranks_sum = float(n * (n + 1) // 2)
    if kind == "all_reduce":
        dist.all_reduce(mine)
        return bool((mine == ranks_sum).all())
    if kind == "broadcast":
        dist.broadcast(mine, src=0)
        return bool((mine == 1.0).all())
    if kind == "reduce":
        dist.reduce(mine, dst=0)
        return r != 0 or bool((mine == ranks_sum).all())
    if kind == "all_gather":
        out = torch.empty(n * ELEMENTS, device=device)
        all_gather_single(out, mine)
        expected = torch.arange(1, n + 1, device=device).repeat_interleave(ELEMENTS).float()
        return bool((out == expected).all())
    if kind == "gather":
        parts = [torch.empty_like(mine) for _ in range(n)] if r == 0 else None
        dist.gather(mine, parts, dst=0)
        return r != 0 or all(bool((p == i + 1).all()) for i, p in enumerate(parts or []))
    if kind == "scatter":
        parts = [torch.full_like(mine, 10.0 + i) for i in range(n)] if r == 0 else None
        dist.scatter(mine, parts, src=0)
        return bool((mine == 10.0 + r).all())
    if kind == "all_to_all":
        out = torch.empty_like(mine)
        dist.all_to_all_single(out, mine)
        expected = torch.arange(1, n + 1, device=device).repeat_interleave(ELEMENTS // n).float()
        return bool((out == expected).all())
    if kind == "reduce_scatter":
        out = torch.empty(ELEMENTS // n, device=device)
        reduce_scatter_single(out, mine)
        return bool((out == ranks_sum).all())
    if kind == "send":
        if r == 0:
            dist.send(mine, dst=1)
        else:
            dist.recv(mine, src=0)
        return r == 0 or bool((mine == 1.0).all())
    raise ValueError(f"no call for {kind}")


def _rank(rank: int, kind: str, port: int, device_type: str, results: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    device = torch.device(device_type, 0)
    if device_type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        "gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=TIMEOUT_S)
    )
    try:
        correct = _run(kind, rank, device)
        if device_type == "cuda":
            torch.cuda.synchronize(device)
        results.put((rank, "ran", correct, ""))
    except Exception as exc:  # the answer we are after: what gloo says when it cannot
        results.put((rank, "failed", False, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
    finally:
        dist.destroy_process_group()


def try_kind(kind: str, device_type: str) -> dict[str, Any]:
    """One collective on a fresh pair of ranks: ran (and correct) on both, or why not."""
    context = mp.get_context("spawn")
    results = context.Queue()
    port = free_port()
    processes = [
        context.Process(target=_rank, args=(rank, kind, port, device_type, results))
        for rank in range(WORLD_SIZE)
    ]
    for process in processes:
        process.start()
    rows = []
    for _ in processes:
        try:
            rows.append(results.get(timeout=TIMEOUT_S * 3))
        except Exception:  # queue.Empty: a rank died before it could say
            break
    for process in processes:
        process.join(10)
        if process.is_alive():
            process.kill()
    errors = sorted({error for _, outcome, _, error in rows if outcome == "failed"})
    ran = len(rows) == WORLD_SIZE and not errors
    if len(rows) < WORLD_SIZE and not errors:
        errors = [f"a rank exited without an answer (exit codes {[p.exitcode for p in processes]})"]
    return {
        "kind": kind,
        "ran": ran,
        "correct": ran and all(correct for _, _, correct, _ in rows),
        "error": "; ".join(errors),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu, or on a GPU box", file=sys.stderr)
        return 2
    # send and recv are one exchange; the table keeps a row for each side.
    kinds = [kind for kind in GLOO_ON_CUDA if kind != "recv"]
    rows = [try_kind(kind, args.device) for kind in kinds]
    send = next(row for row in rows if row["kind"] == "send")
    rows.append({**send, "kind": "recv"})
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"gloo, {WORLD_SIZE} ranks on {name} ({args.device} tensors), torch {torch.__version__}")
    print(f"   {'collective':<16} {'ran':<5} {'correct':<8} {'table says':<11} error")
    disagree = []
    for row in rows:
        table = GLOO_ON_CUDA[row["kind"]] if args.device == "cuda" else True
        works = row["ran"] and row["correct"]
        row["table_says"] = table
        if works != table:
            disagree.append(row["kind"])
        said = "runs" if table else "refused"
        print(
            f"   {row['kind']:<16} {'yes' if row['ran'] else 'no':<5} "
            f"{'yes' if row['correct'] else 'no':<8} {said:<11} {row['error']}"
        )
    verdict = f"disagree: {', '.join(disagree)}" if disagree else "agree"
    print(f"\nthe table in demos/specs/devices.py and this run {verdict}")
    if args.json:
        report = {"device": args.device, "device_name": name, "torch": torch.__version__}
        args.json.write_text(json.dumps({**report, "rows": rows}, indent=2) + "\n")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
