"""Starts and stops a demo worker beside the web app: `python -m demos.worker` as a child.

The worker runs in a session of its own, so its ranks share one process group that `stop`
can clear even if the launcher hangs, and a Ctrl-C meant for the app reaches the worker only
as the SIGTERM that `stop` sends. `--exit-with-parent` makes the worker stop by itself if the
app dies without calling `stop`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from app.live.worker_client import parse_address

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOKEN_ENV = "SHARDLAB_WORKER_TOKEN"
POLL_INTERVAL_S = 0.1
STATUS_TIMEOUT_S = 1.0
MAX_STATUS_BYTES = 64 * 1024

log = logging.getLogger(__name__)


class LocalWorker:
    def __init__(
        self,
        address: str,
        token: str,
        log_path: Path,
        ranks: int = 2,
        backend: str = "auto",
        device: str = "auto",
        stop_timeout_s: float = 8.0,
        pg_timeout_s: float = 10.0,
    ) -> None:
        self.address = address
        self.host, self.port = parse_address(address)
        self.token = token
        self.log_path = Path(log_path)
        self.ranks = ranks
        self.backend = backend
        self.device = device
        # Longer than the launcher's own grace for its ranks, so it normally reaps them itself.
        self.stop_timeout_s = stop_timeout_s
        self.pg_timeout_s = pg_timeout_s
        self.restarts = 0
        self._restart_lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The launcher's pid, which is also the process group id of all its ranks."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the launcher and return at once; the ranks need a few seconds (wait_ready)."""
        if self.running:
            return
        if self._log is not None:  # a previous launcher that has exited
            self._log.close()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        command = [sys.executable, "-m", "demos.worker", "--ranks", str(self.ranks)]
        command += ["--backend", self.backend, "--device", self.device]
        command += ["--listen", self.address, "--exit-with-parent"]
        command += ["--pg-timeout-s", str(self.pg_timeout_s)]
        self._proc = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            env={**os.environ, TOKEN_ENV: self.token},
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def restart(self) -> None:
        """Stop whatever is left of this worker and start a fresh one (a self-heal)."""
        with self._restart_lock:
            self.stop()
            self.restarts += 1
            self.start()

    def _answers_status(self) -> bool:
        request = json.dumps({"token": self.token, "op": "status"}).encode() + b"\n"
        try:
            with socket.create_connection((self.host, self.port), STATUS_TIMEOUT_S) as conn:
                conn.sendall(request)
                with conn.makefile("rb") as reply:
                    line = reply.readline(MAX_STATUS_BYTES)
            event = json.loads(line)
        except (OSError, ValueError):
            return False
        return (
            isinstance(event, dict) and event.get("event") == "status" and bool(event.get("ready"))
        )

    def wait_ready(self, timeout_s: float = 60.0) -> bool:
        """Blocks until the worker answers `status` (True), exits or times out (False).

        From async code, run it in a thread (asyncio.to_thread).
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                return False
            if self._answers_status():
                return True
            time.sleep(POLL_INTERVAL_S)
        return False

    def stop(self) -> None:
        """SIGTERM the launcher (it stops its ranks); kill the whole group if that stalls."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(self.stop_timeout_s)
                except subprocess.TimeoutExpired:
                    # Still unreaped, so the group id cannot belong to anyone else yet.
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


async def keep_worker_running(worker: LocalWorker, interval_s: float = 1.0) -> None:
    """Restarts the local worker whenever it has exited (a rank crashed, or was killed).

    The pool heals by itself instead of on the next run, so the next run finds it warm.
    """
    while True:
        await asyncio.sleep(interval_s)
        if worker.pid is not None and not worker.running:
            log.warning("the demo worker exited; starting a fresh one")
            await asyncio.to_thread(worker.restart)
