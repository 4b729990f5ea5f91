"""The warm demo worker: N ranks keep one process group alive and run demo jobs on request.

Starting ranks costs seconds (feasibility §9) and a demo job costs milliseconds, so the ranks
are started once and then wait for jobs. Run `python -m demos.worker --help` for usage.

Design, and why:

- Launcher. `python -m demos.worker --ranks N` starts N copies of this module with the
  environment torchrun would give them (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT), so the
  ranks run one code path whether this launcher or torchrun started them. The launcher never
  imports torch, so it is quick; it only supervises: SIGTERM/SIGINT stops every rank, and one rank
  exiting takes the others down. Ranks ask the kernel for SIGTERM when their parent dies.
- Rank 0 answers a tiny protocol on --listen: newline-delimited JSON, one request per
  connection, served one connection at a time on its main thread, so jobs run one after the
  other and waiting clients sit in the listen backlog.
- Control traffic is kept out of the measurement windows, because `wchar` counts every byte a
  process writes:
  * the job spec travels through the c10d TCPStore: idle ranks block in `store.get("job/<n>")`
    on their own store connection with a timeout of days. That is a store wait, not a
    collective, so the process group's timeout never trips while idle, and a dead rank 0
    closes the store socket, which ends the wait at once;
  * a barrier follows, because rank 0 hosts the store server and its replies to the last
    `get` must not land in rank 0's first window;
  * after each window, every rank's row goes to rank 0 with gather_object; rank 0 writes the
    event to the client, then broadcasts whether to go on. A client that has gone away (failed
    write, or EOF seen by a non-blocking peek) stops the job after the current iteration.
- The process group has a timeout (default 60 s), so a dead or stuck peer becomes an
  exception instead of a hang. Rank 0 turns it into an `error` event and the worker exits: a
  group that failed mid-collective cannot be trusted. The launcher then stops the other ranks.

Here: the command line and each rank's start. The launcher is demos/worker_launcher.py, a job
on the ranks demos/worker_jobs.py, rank 0's protocol demos/worker_server.py.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import socket
import sys
from datetime import timedelta

from demos.specs import DEMO_PARAMS
from demos.worker_jobs import JobRunner, follow_jobs
from demos.worker_launcher import RANK_ENV, die_with_parent, launch, parse_address
from demos.worker_server import Server

# The registry: a demo is a module demos/<name>.py with WARMUP (params dict), PRELOAD (module
# names), run(rank, params) -> iterator of per-rank rows (each holding "correct"), and
# summary(params, world_size, measurements) -> dict; its params model is demos/specs/<name>.py.
DEMOS: dict[str, str] = {name: f"demos.{name}" for name in DEMO_PARAMS}

TOKEN_ENV = "SHARDLAB_WORKER_TOKEN"
IDLE_WAIT = timedelta(days=7)

log = logging.getLogger("shardlab.worker")

EPILOG = f"""\
The token comes from the environment variable {TOKEN_ENV} (required, non-empty).

Under torchrun the same module runs as one rank per process; rank 0 listens:
  {TOKEN_ENV}=... torchrun --nproc-per-node 2 -m demos.worker --listen 127.0.0.1:8790

Protocol, one JSON request line per TCP connection:
  {{"token": ..., "op": "status"}}  ->  one "status" event
  {{"token": ..., "op": "run", "demo": "all_reduce", "params": {{...}}}}
      ->  "accepted", one "measurement" per iteration, then "done" (or "error")
Closing the connection mid-job stops the job after the current iteration.
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m demos.worker",
        description="Keep N torch.distributed ranks warm and run ShardLab demo jobs on them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--listen", required=True, help="HOST:PORT where rank 0 answers jobs")
    parser.add_argument(
        "--ranks", type=int, help="ranks to start (not with torchrun, which sets WORLD_SIZE)"
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "gloo", "nccl"),
        default="auto",
        help="auto: nccl when there is a GPU per local rank, else gloo (default: auto)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where the demos' tensors live. auto: cuda with nccl, cpu with gloo; cuda with gloo "
        "puts every rank on the GPUs (ranks may share one) and refuses demos whose collectives "
        "gloo cannot run on CUDA (default: auto)",
    )
    parser.add_argument(
        "--pg-timeout-s",
        type=float,
        default=60.0,
        help="a collective waiting longer than this fails the job (default: 60)",
    )
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when the process that started the launcher goes away",
    )
    args = parser.parse_args(argv)
    try:
        parse_address(args.listen)
    except ValueError as exc:
        parser.error(f"--listen: {exc}")
    if not os.environ.get(TOKEN_ENV):
        parser.error(f"set {TOKEN_ENV} to the token clients must send")
    under_torchrun = "WORLD_SIZE" in os.environ
    if under_torchrun and args.ranks not in (None, int(os.environ["WORLD_SIZE"])):
        parser.error("--ranks disagrees with WORLD_SIZE set by torchrun; leave it out")
    if not under_torchrun and (args.ranks is None or args.ranks < 1):
        parser.error("--ranks N (N >= 1) is required unless torchrun starts the ranks")
    return args


def resolve_device(requested: str, backend: str) -> str:
    """cpu or cuda. NCCL only moves CUDA tensors; gloo moves host ones, and CUDA ones for the
    collectives in specs/devices.py (it copies them through pinned host memory)."""
    import torch

    if backend == "nccl":
        if requested == "cpu":
            raise SystemExit("--backend nccl needs --device cuda (or auto)")
        return "cuda"
    if requested == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda needs a visible GPU")
    return "cuda" if requested == "cuda" else "cpu"


def resolve_backend(requested: str, local_ranks: int) -> str:
    import torch
    import torch.distributed as dist

    has_gpus = (
        torch.cuda.is_available()
        and torch.cuda.device_count() >= local_ranks
        and dist.is_nccl_available()
    )
    if requested == "auto":
        return "nccl" if has_gpus else "gloo"
    if requested == "nccl" and not has_gpus:
        raise SystemExit(f"--backend nccl needs {local_ranks} visible GPU(s) and an NCCL build")
    return requested


def rank_main(args: argparse.Namespace) -> int:
    """One rank: join the process group, warm up, then serve (rank 0) or follow jobs."""
    if any(os.environ.get(name) != value for name, value in RANK_ENV.items()):
        command = [sys.executable, "-m", "demos.worker", *sys.argv[1:]]
        os.execve(sys.executable, command, {**os.environ, **RANK_ENV})
    die_with_parent()
    # Python's SIGINT handler would wait for a blocking store.get to return (days): let the
    # kernel end the rank at once, as it does for SIGTERM. torchrun forwards the SIGINT it got.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))

    import torch
    import torch.distributed as dist

    from demos import flight_recorder
    from demos.probes import RankInfo

    torch.set_num_threads(1)
    demos = {name: importlib.import_module(path) for name, path in DEMOS.items()}
    for demo in demos.values():
        for module in demo.PRELOAD:
            importlib.import_module(module)

    backend = resolve_backend(args.backend, local_ranks)
    if resolve_device(args.device, backend) == "cuda":
        # Untested on GPU as of 2026-11-25 for gloo. NCCL has one GPU per local rank; gloo's
        # ranks share the GPUs there are, which is how one GPU hosts several ranks.
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        device_name = torch.cuda.get_device_name(device)
    else:
        device, device_name = torch.device("cpu"), "cpu"
    flight_recorder.enable()
    dist.init_process_group(
        backend,
        timeout=timedelta(seconds=args.pg_timeout_s),
        device_id=device if backend == "nccl" else None,
    )
    # Our own store connection, so its long idle timeout leaves the group's store alone.
    client = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=IDLE_WAIT,
    )
    store = dist.PrefixStore("shardlab", client)
    runner = JobRunner(RankInfo(rank, world_size, backend, device), demos)
    runner.warm_up()
    if rank != 0:
        follow_jobs(runner, store)
        return 0
    with socket.create_server(parse_address(args.listen), backlog=16) as listener:
        log.info(
            "ready: %d rank(s), %s on %s, listening on %s, demos: %s",
            world_size,
            backend,
            device_name,
            args.listen,
            ", ".join(demos),
        )
        Server(runner, store, os.environ[TOKEN_ENV], backend, device_name).serve(listener)
    return 0


def main(argv: list[str] | None = None) -> int:
    role = f"rank {os.environ['RANK']}" if "RANK" in os.environ else "launcher"
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format=f"%(asctime)s shardlab-worker {role} %(levelname)s %(message)s",
    )
    args = parse_args(argv)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return rank_main(args)
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
