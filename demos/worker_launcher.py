"""The demo worker's launcher, and its contract with the ranks it starts.

`python -m demos.worker --ranks N` starts N ranks with torchrun's environment and supervises
them (demos/worker.py's docstring says why). It never imports torch, so it starts quickly.
The ranks' side of the contract is here too: they stop when the launcher goes away.
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time

LAUNCHER_PID_ENV = "SHARDLAB_LAUNCHER_PID"
# glibc returns freed large blocks to the OS with this, so a per-rank RSS reading means
# something (feasibility §8). It must be in the environment before the process starts.
RANK_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}
# Only for the launcher's own ranks, which talk over loopback alone (torchrun's may need real
# DNS for other nodes): torch's TCPStore server looks up the name of each peer's address
# (::ffff:127.0.0.1, which no hosts file lists) and blocks on it. Where the name service does
# not answer (an offline box; a container network without its DNS) glibc's default 5 s x 2
# ate the whole 10 s rendezvous and the ranks never met.
LOCAL_RANK_ENV = {"RES_OPTIONS": "timeout:1 attempts:1"}
PR_SET_PDEATHSIG = 1
RANK_STOP_GRACE_S = 5.0
# After one rank dies the others fail within milliseconds; rank 0 needs that moment to tell
# its client why before the launcher stops it.
RANK_REPORT_GRACE_S = 3.0

log = logging.getLogger("shardlab.worker")


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_ranks(ranks: list[subprocess.Popen], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    for proc in ranks:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return


def _stop_ranks(ranks: list[subprocess.Popen]) -> None:
    for proc in ranks:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + RANK_STOP_GRACE_S
    for proc in ranks:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def launch(args: argparse.Namespace) -> int:
    """Start the ranks and supervise them until a signal, a rank exit or the parent's exit."""
    try:
        socket.create_server(parse_address(args.listen)).close()
    except OSError as exc:
        log.error("cannot listen on %s: %s", args.listen, exc)
        return 2
    master_port = _free_port()
    rank_args = ["--backend", args.backend, "--device", args.device, "--listen", args.listen]
    rank_args += ["--pg-timeout-s", str(args.pg_timeout_s)]
    ranks = []
    for rank in range(args.ranks):
        env = {
            **os.environ,
            **RANK_ENV,
            **LOCAL_RANK_ENV,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(args.ranks),
            "LOCAL_WORLD_SIZE": str(args.ranks),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(master_port),
            LAUNCHER_PID_ENV: str(os.getpid()),
        }
        command = [sys.executable, "-m", "demos.worker", *rank_args]
        ranks.append(subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL))

    stopping: list[int] = []

    def request_stop(signum: int, _frame: object) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    parent = os.getppid()
    exit_code = 0
    while not stopping:
        exited = [
            (rank, proc.returncode) for rank, proc in enumerate(ranks) if proc.poll() is not None
        ]
        if exited:
            rank, code = exited[0]
            log.error("rank %d exited with code %s; stopping the worker", rank, code)
            exit_code = code or 1
            _wait_for_ranks(ranks, RANK_REPORT_GRACE_S)
            break
        if args.exit_with_parent and os.getppid() != parent:
            log.info("the process that started the worker is gone; stopping")
            break
        time.sleep(0.2)
    _stop_ranks(ranks)
    return exit_code


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this rank when its parent (launcher or torchrun) dies."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    exit_if_orphaned()


def exit_if_orphaned() -> None:
    """The death signal covers Linux; this covers the rest and a parent that died early."""
    expected = os.environ.get(LAUNCHER_PID_ENV)
    if expected and os.getppid() != int(expected):
        raise SystemExit("the launcher is gone; this rank stops too")
