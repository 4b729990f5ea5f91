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
"""

from __future__ import annotations

import argparse
import ctypes
import hmac
import importlib
import itertools
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import timedelta
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from demos.specs import DEMO_COLLECTIVES, DEMO_PARAMS
from demos.specs._devices import job_problem

if TYPE_CHECKING:
    from demos.probes import RankInfo

# The registry: a demo is a module demos/<name>.py with WARMUP (params dict), PRELOAD (module
# names), run(rank, params) -> iterator of per-rank rows (each holding "correct"), and
# summary(params, world_size, measurements) -> dict; its params model is demos/specs/<name>.py.
DEMOS: dict[str, str] = {name: f"demos.{name}" for name in DEMO_PARAMS}

TOKEN_ENV = "SHARDLAB_WORKER_TOKEN"
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
MAX_REQUEST_BYTES = 64 * 1024
CLIENT_TIMEOUT_S = 10.0
IDLE_WAIT = timedelta(days=7)
PR_SET_PDEATHSIG = 1
RANK_STOP_GRACE_S = 5.0
# After one rank dies the others fail within milliseconds; rank 0 needs that moment to tell
# its client why before the launcher stops it.
RANK_REPORT_GRACE_S = 3.0

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


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


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


# ---------------------------------------------------------------- launcher (no torch here)


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


# ---------------------------------------------------------------- ranks


def _die_with_parent() -> None:
    """Ask Linux to SIGTERM this rank when its parent (launcher or torchrun) dies."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    _exit_if_orphaned()


def _exit_if_orphaned() -> None:
    """The death signal covers Linux; this covers the rest and a parent that died early."""
    expected = os.environ.get(LAUNCHER_PID_ENV)
    if expected and os.getppid() != int(expected):
        raise SystemExit("the launcher is gone; this rank stops too")


@dataclass(frozen=True)
class Job:
    job_id: str
    demo: str
    params: dict[str, Any]


def _next_row(steps: Iterator[dict[str, Any]]) -> dict[str, Any] | None:
    """The demo's next row, None when it has finished, or the error it raised."""
    try:
        return next(steps)
    except StopIteration:
        return None
    except Exception as exc:
        log.exception("demo step failed")
        return {"error": f"{type(exc).__name__}: {exc}"}


def _judge(iteration: int, rows: list[dict[str, Any] | None]) -> tuple[str, dict[str, Any]]:
    """Rank 0's verdict on one control step: go on with a measurement, or end the job."""
    errors = [f"rank {r}: {row['error']}" for r, row in enumerate(rows) if row and "error" in row]
    if errors:
        return "failed", {"event": "error", "message": "; ".join(errors)}
    if all(row is None for row in rows):
        return "done", {}
    if any(row is None for row in rows):
        message = "the ranks finished after different numbers of steps (a bug in the demo)"
        return "failed", {"event": "error", "message": message}
    ranks = [{key: value for key, value in row.items() if key != "correct"} for row in rows]
    event = {
        "event": "measurement",
        "iteration": iteration,
        "ranks": ranks,
        "correct": all(row["correct"] for row in rows),
    }
    return "next", event


class JobRunner:
    """Runs one job on this rank, in step with the others."""

    def __init__(self, rank: RankInfo, demos: dict[str, ModuleType]) -> None:
        self.rank = rank
        self.demos = demos

    def execute(self, job: Job, emit: Callable[[dict[str, Any]], bool] | None) -> tuple[str, int]:
        """Rank 0 passes `emit` (False: the client is gone). Returns (outcome, iterations)."""
        import torch.distributed as dist

        demo = self.demos[job.demo]
        params = DEMO_PARAMS[job.demo].model_validate(job.params)
        dist.barrier()
        steps = demo.run(self.rank, params)
        measurements: list[dict[str, Any]] = []
        verdict: list[str | None] = [None]
        try:
            for iteration in itertools.count():
                row = _next_row(steps)
                rows: list[Any] | None = None if emit is None else [None] * self.rank.world_size
                dist.gather_object(row, rows, dst=0)
                if emit is not None and rows is not None:
                    verdict[0], event = _judge(iteration, rows)
                    if event.get("event") == "measurement":
                        measurements.append(event)
                    if event and not emit(event) and verdict[0] == "next":
                        verdict[0] = "cancelled"
                dist.broadcast_object_list(verdict, src=0)
                if verdict[0] != "next":
                    break
        finally:
            steps.close()
        if verdict[0] == "done" and emit is not None:
            try:
                summary = demo.summary(params, self.rank.world_size, measurements)
            except Exception as exc:
                log.exception("summary of job %s failed", job.job_id)
                emit({"event": "error", "message": f"summary failed: {type(exc).__name__}: {exc}"})
                return "failed", len(measurements)
            emit({"event": "done", "summary": summary})
        return str(verdict[0]), len(measurements)

    def problem(self, name: str, params: BaseModel) -> str | None:
        """Why this rank's backend and device cannot run the job, or None (see specs/_devices)."""
        rank = self.rank
        return job_problem(name, DEMO_COLLECTIVES[name], params, rank.backend, rank.device.type)

    def warm_up(self) -> None:
        """Run every demo this worker can run once, so a real job pays no first-call costs."""
        emit = (lambda _event: True) if self.rank.rank == 0 else None
        for name, demo in self.demos.items():
            if self.problem(name, DEMO_PARAMS[name].model_validate(demo.WARMUP)) is None:
                self.execute(Job("warm-up", name, demo.WARMUP), emit)


def _client_gone(conn: socket.socket) -> bool:
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _send(conn: socket.socket, event: dict[str, Any]) -> bool:
    if _client_gone(conn):
        return False
    try:
        conn.sendall(json.dumps(event).encode() + b"\n")
    except OSError:
        return False
    return True


class RequestError(Exception):
    """A request we answer with an error event."""


class WorkerBroken(Exception):
    """A job failed after the ranks began it: the process group can no longer be trusted."""


def _read_request(conn: socket.socket) -> dict[str, Any]:
    data = b""
    while b"\n" not in data:
        try:
            chunk = conn.recv(4096)
        except TimeoutError as exc:
            raise RequestError(f"no request line within {CLIENT_TIMEOUT_S:g} s") from exc
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise RequestError(f"request longer than {MAX_REQUEST_BYTES} bytes")
    try:
        request = json.loads(data.split(b"\n", 1)[0])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestError(f"request is not one line of JSON: {exc}") from exc
    if not isinstance(request, dict):
        raise RequestError("request must be a JSON object")
    return request


def describe_validation_error(demo: str, error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "params"
        problems.append(f"{field}: {item['msg']} (got {item.get('input')!r})")
    return f"invalid params for {demo}: " + "; ".join(problems)


class Server:
    """Rank 0's side: answers requests and hands jobs to the other ranks."""

    def __init__(
        self, runner: JobRunner, store: Any, token: str, backend: str, device_name: str
    ) -> None:
        self.runner = runner
        self.store = store
        self.token = token
        self.backend = backend
        self.device_name = device_name
        self.jobs_started = 0

    def serve(self, listener: socket.socket) -> None:
        listener.settimeout(1.0)
        while True:
            try:
                conn, _peer = listener.accept()
            except TimeoutError:
                _exit_if_orphaned()
                continue
            with conn:
                conn.settimeout(CLIENT_TIMEOUT_S)
                try:
                    self.handle(conn)
                except WorkerBroken:
                    raise
                except Exception as exc:
                    # Nothing reached the other ranks yet, so the worker itself is fine.
                    log.exception("request failed")
                    _send(conn, {"event": "error", "message": f"the worker failed: {exc}"})

    def handle(self, conn: socket.socket) -> None:
        try:
            request = _read_request(conn)
        except RequestError as exc:
            _send(conn, {"event": "error", "message": str(exc)})
            return
        token = str(request.get("token", "")).encode()
        if not hmac.compare_digest(token, self.token.encode()):
            _send(conn, {"event": "error", "message": "bad token"})
        elif request.get("op") == "status":
            _send(conn, self.status())
        elif request.get("op") == "run":
            self.run(conn, request)
        else:
            message = f"unknown op {request.get('op')!r}; expected 'status' or 'run'"
            _send(conn, {"event": "error", "message": message})

    def status(self) -> dict[str, Any]:
        return {
            "event": "status",
            "ready": True,
            "world_size": self.runner.rank.world_size,
            "backend": self.backend,
            "device": self.runner.rank.device.type,
            "device_name": self.device_name,
            "demos": sorted(self.runner.demos),
        }

    def run(self, conn: socket.socket, request: dict[str, Any]) -> None:
        name = request.get("demo")
        if not isinstance(name, str) or name not in self.runner.demos:
            known = ", ".join(sorted(self.runner.demos))
            _send(conn, {"event": "error", "message": f"unknown demo {name!r}; known: {known}"})
            return
        try:
            params = DEMO_PARAMS[name].model_validate(request.get("params", {}))
        except ValidationError as exc:
            _send(conn, {"event": "error", "message": describe_validation_error(name, exc)})
            return
        problem = self.runner.problem(name, params)
        if problem is not None:
            _send(conn, {"event": "error", "message": f"refused: {problem}"})
            return
        job = Job(uuid.uuid4().hex[:12], name, params.model_dump())
        world_size = self.runner.rank.world_size
        accepted = {"event": "accepted", "job_id": job.job_id, "demo": name}
        accepted |= {"world_size": world_size, "backend": self.backend, "params": job.params}
        if not _send(conn, accepted):
            return
        self.jobs_started += 1
        key = f"job/{self.jobs_started}"
        self.store.set(key, json.dumps(asdict(job)))
        started = time.perf_counter()
        try:
            outcome, iterations = self.runner.execute(job, lambda event: _send(conn, event))
        except Exception as exc:
            message = f"the worker lost contact with its ranks ({exc}); it is shutting down"
            _send(conn, {"event": "error", "message": message})
            raise WorkerBroken(message) from exc
        self.store.delete_key(key)
        log.info(
            "job %s %s %s: %s after %d iteration(s), %.3f s",
            job.job_id,
            name,
            json.dumps(job.params),
            outcome,
            iterations,
            time.perf_counter() - started,
        )


def follow_jobs(runner: JobRunner, store: Any) -> None:
    """Ranks other than 0: wait for each job spec in the store, run it, repeat."""
    for sequence in itertools.count(1):
        job = Job(**json.loads(store.get(f"job/{sequence}")))
        runner.execute(job, None)


def resolve_device(requested: str, backend: str) -> str:
    """cpu or cuda. NCCL only moves CUDA tensors; gloo moves host ones, and CUDA ones for the
    collectives in specs/_devices.py (it copies them through pinned host memory)."""
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
    _die_with_parent()
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
