"""Rank 0's side of the demo worker: the newline-delimited JSON protocol on --listen.

One request per connection, served one connection at a time (demos/worker.py's docstring);
a run request becomes a job that rank 0 hands to the other ranks through the store.
"""

from __future__ import annotations

import hmac
import json
import logging
import select
import socket
import time
import uuid
from dataclasses import asdict
from typing import Any

from pydantic import ValidationError

from demos.specs import DEMO_PARAMS
from demos.worker_jobs import Job, JobRunner
from demos.worker_launcher import exit_if_orphaned

MAX_REQUEST_BYTES = 64 * 1024
CLIENT_TIMEOUT_S = 10.0

log = logging.getLogger("shardlab.worker")


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
                exit_if_orphaned()
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
