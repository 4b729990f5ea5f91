"""Every demo once on a real worker, judged as its web page judges it: the check a GPU box needs.

Starts the demo worker as the app does (LocalWorker: `python -m demos.worker`) or under
torchrun (--torchrun), sends each demo of the registry (demos/specs) its warm-up parameters,
the smallest it has, through the app's WorkerClient, and prints one table per demo: its page's
verdict (app/live/pages/<demo>.py: `PAGE.predict`, then `PAGE.verdict` on the `done` summary),
each quantity measured beside predicted as equal, explained (with the reason) or unexpected;
then the figures no page judges (times, the CUDA allocator's bytes: bench/demo_checks.py).
Exits 1 when a demo fails, returns a wrong result or has an unexpected check; a demo the worker
refuses (gloo cannot run its collectives on CUDA) or that needs more ranks than there are is
listed and not counted.

Run from the repository root:
  .venv/bin/python bench/gpu_check.py --backend gloo --ranks 2            # CPU, as in CI
  .venv/bin/python bench/gpu_check.py --backend nccl --ranks 1 --json gpu.json   # one GPU
  .venv/bin/python bench/gpu_check.py --backend gloo --device cuda --ranks 2     # ranks share it
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from demo_checks import figures  # bench/, beside this script
from demo_latency import free_address

from app.live.pages import DEMO_PAGES
from app.live.verdict import Check, reason_lines
from app.live.worker_client import WorkerClient, WorkerUnavailable
from app.live.worker_process import PROJECT_ROOT, TOKEN_ENV, LocalWorker
from demos.specs import DEMO_COLLECTIVES, DEMO_MIN_RANKS, DEMO_PARAMS
from demos.specs.devices import GLOO_ON_CUDA, job_problem

READY_TIMEOUT_S = 180.0
POLL_S = 0.5
STATUS_TIMEOUT_S = 5.0
# A larger ZeRO model on CUDA ranks only: hundreds of MB per rank, so the allocator's figures
# mean something beside the tensor accounting (demos/specs/zero_stages.py, MODEL_SCALES).
CUDA_EXTRA_RUNS = (("zero_stages", {"width": 128, "layers": 4, "vocab": 1024, "model_scale": 8}),)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--ranks", type=int, default=2, help="ranks to start (default: 2)")
    parser.add_argument("--torchrun", action="store_true", help="start the worker with torchrun")
    parser.add_argument("--json", type=Path, help="also write the tables here (docs/benchmarks.md)")
    return parser.parse_args(argv)


class Worker:
    """The worker, started the app's way or torchrun's, and stopped on exit."""

    def __init__(self, args: argparse.Namespace, log_dir: Path) -> None:
        self.address = free_address()
        self.token = secrets.token_hex(16)
        self.log_path = log_dir / "worker.log"
        self.args = args
        self.local: LocalWorker | None = None
        self.torchrun: subprocess.Popen | None = None

    def start(self) -> None:
        a = self.args
        if not a.torchrun:
            self.local = LocalWorker(
                self.address, self.token, self.log_path, ranks=a.ranks, backend=a.backend,
                device=a.device, pg_timeout_s=60.0,
            )  # fmt: skip
            self.local.start()
            return
        torchrun = Path(sys.executable).with_name("torchrun")
        command = [str(torchrun), "--standalone", "--nproc-per-node", str(a.ranks)]
        command += ["-m", "demos.worker", "--listen", self.address, "--backend", a.backend]
        command += ["--device", a.device]
        with self.log_path.open("ab") as log:
            self.torchrun = subprocess.Popen(
                command, cwd=PROJECT_ROOT, env={**os.environ, TOKEN_ENV: self.token},
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def wait_ready(self, timeout_s: float) -> bool:
        """True once the worker answers; False as soon as it exits (a rank that cannot start,
        as NCCL without a GPU, says why in the log) or once `timeout_s` has passed."""
        if self.local is not None:
            return self.local.wait_ready(timeout_s)
        assert self.torchrun is not None
        client = WorkerClient(self.address, self.token, connect_timeout_s=POLL_S)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.torchrun.poll() is None:
            try:
                if asyncio.run(client.status(timeout_s=STATUS_TIMEOUT_S)).get("ready"):
                    return True
            except WorkerUnavailable:
                pass
            time.sleep(POLL_S)
        return False

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()
        if self.torchrun is not None and self.torchrun.poll() is None:
            os.killpg(self.torchrun.pid, signal.SIGTERM)  # our own child's session
            self.torchrun.wait(30)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""


def page_of(demo: str) -> Any:
    return next(page for page in DEMO_PAGES.values() if page.demo == demo)


async def run_one(
    client: WorkerClient, demo: str, params: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    """One demo's outcome: ok, disagrees, failed, refused or skipped, with its page's checks
    and the figures no page judges."""
    world_size, backend, device = status["world_size"], status["backend"], status["device"]
    spec = DEMO_PARAMS[demo].model_validate(params)
    result: dict[str, Any] = {
        "demo": demo,
        "params": spec.model_dump(),
        "checks": [],
        "figures": [],
    }
    if world_size < DEMO_MIN_RANKS[demo]:
        reason = f"needs at least {DEMO_MIN_RANKS[demo]} ranks; this worker has {world_size}"
        return {**result, "status": "skipped", "reason": reason}
    expected_refusal = job_problem(demo, DEMO_COLLECTIVES[demo], spec, backend, device)
    started = time.perf_counter()
    events = [event async for event in client.run(demo, spec.model_dump())]
    result["wall_s"] = round(time.perf_counter() - started, 3)
    last = events[-1]
    if last["event"] == "error":
        refused = expected_refusal is not None and last["message"].startswith("refused:")
        return {**result, "status": "refused" if refused else "failed", "reason": last["message"]}
    if expected_refusal is not None:
        reason = f"ran, though demos/specs/devices.py says: {expected_refusal}"
        return {**result, "status": "disagrees", "reason": reason}
    page = page_of(demo)
    checks = page.verdict(last["summary"], page.predict(spec, world_size), backend)
    result["checks"] = [asdict(check) for check in checks]
    result["figures"] = [asdict(figure) for figure in figures(demo, last["summary"])]
    # The worker's own flag, every rank's rows: a wrong result fails the run even where the
    # page's verdict has no row for it.
    wrong = [e["iteration"] for e in events if e["event"] == "measurement" and not e["correct"]]
    problems = [_label(c.scope, c.quantity) for c in checks if c.status == "unexpected"]
    if wrong:
        problems.insert(0, f"wrong result at iteration {', '.join(map(str, wrong))}")
    status = "failed" if wrong else "disagrees" if problems else "ok"
    return {**result, "status": status, "reason": "; ".join(problems)}


def _label(scope: str, quantity: str) -> str:
    return f"{scope}: {quantity}" if scope else quantity


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return text if len(text) <= 48 else text[:45] + "..."


def print_result(result: dict[str, Any]) -> None:
    """The verdict's rows as the page shows them, each reason once after the rows it covers;
    then the unjudged figures."""
    print(f"\n== {result['demo']}: {result['status']}  {result['reason']}")
    checks = [Check(**check) for check in result["checks"]]
    for check, covers in zip(checks, reason_lines(checks), strict=True):
        measured, predicted = _short(check.measured), _short(check.predicted)
        label = _label(check.scope, check.quantity)
        print(f"   {label:<58} {measured:>20}  {predicted:>20}  {check.status}")
        if covers:
            why = check.reason if check.status == "explained" else "not expected: no known cause"
            print(f"      ↳ {f'the {covers} rows above: ' if covers > 1 else ''}{why}")
    for figure in result["figures"]:
        label = _label(figure["scope"], figure["quantity"])
        print(f"   {label:<58} {_short(figure['measured']):>20}  (not judged)")


def gloo_cuda_lines() -> list[str]:
    """The table the worker refuses by, and what it means for each demo."""
    lines = ["gloo on CUDA tensors (demos/specs/devices.py), so with --backend gloo --device cuda:"]
    lines.append(
        "   " + ", ".join(f"{k} {'yes' if ok else 'NO'}" for k, ok in GLOO_ON_CUDA.items())
    )
    for demo, collectives in DEMO_COLLECTIVES.items():
        missing = [kind for kind in collectives if not GLOO_ON_CUDA.get(kind, False)]
        verdict = f"refused (needs {', '.join(missing)})" if missing else "runs"
        lines.append(f"   {demo:<26} {verdict}")
    return lines


async def check_all(client: WorkerClient) -> dict[str, Any]:
    """Every demo in turn, each printed as it ends: a run cut short still shows what ran."""
    status = await client.status()
    print(
        f"device {status['device_name']} ({status['device']}), backend {status['backend']}, "
        f"{status['world_size']} rank(s)"
    )
    print("\n".join(gloo_cuda_lines()), flush=True)
    runs = [(demo, importlib.import_module(f"demos.{demo}").WARMUP) for demo in DEMO_PARAMS]
    if status["device"] == "cuda":  # untested on GPU as of 2026-11-27
        runs += [(demo, params) for demo, params in CUDA_EXTRA_RUNS]
    results = []
    for demo, params in runs:
        results.append(await run_one(client, demo, params, status))
        print_result(results[-1])
        sys.stdout.flush()
    return {
        "device": status["device"],
        "device_name": status["device_name"],
        "backend": status["backend"],
        "ranks": status["world_size"],
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as log_dir:
        worker = Worker(args, Path(log_dir))
        worker.start()
        try:
            if not worker.wait_ready(READY_TIMEOUT_S):
                print(f"the worker did not start:\n{worker.log_tail()}", file=sys.stderr)
                return 2
            client = WorkerClient(worker.address, worker.token, connect_timeout_s=READY_TIMEOUT_S)
            report = asyncio.run(check_all(client))
        except WorkerUnavailable as exc:
            print(f"the worker did not answer: {exc}\n{worker.log_tail()}", file=sys.stderr)
            return 2
        finally:
            worker.stop()
    bad = [r["demo"] for r in report["results"] if r["status"] in ("failed", "disagrees")]
    counts = {
        s: sum(r["status"] == s for r in report["results"]) for s in ("ok", "skipped", "refused")
    }
    tally = ", ".join(f"{count} {status}" for status, count in counts.items())
    print(f"\n{tally}, {len(bad)} failed or disagreeing")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
