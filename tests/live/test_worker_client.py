"""The app's worker client and local worker against real workers: protocol, errors, lifecycle."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.live.worker_client import WorkerClient, WorkerUnavailable
from app.live.worker_process import LocalWorker
from demos.specs import DEMO_PARAMS
from tests.utils import free_port
from tests.worker_fixture import group_processes, run_job

WorkerInfo = tuple[LocalWorker, str, str]
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_the_client_side_imports_neither_torch_nor_fastapi() -> None:
    code = (
        "import sys, app.live.worker_client, app.live.worker_process; "
        "loaded = {'torch', 'fastapi'} & set(sys.modules); "
        "assert not loaded, f'imported {loaded}'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)


def test_an_absent_worker_is_reported_in_plain_words() -> None:
    client = WorkerClient(f"127.0.0.1:{free_port()}", "token", connect_timeout_s=0.3)

    with pytest.raises(WorkerUnavailable, match="did not accept a connection within 0.3 s"):
        asyncio.run(client.status())

    async def first_event() -> dict[str, Any]:
        return await anext(client.run("all_reduce", {}))

    with pytest.raises(WorkerUnavailable, match="is it running"):
        asyncio.run(first_event())


@pytest.mark.demo
def test_status_describes_the_worker(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    status = asyncio.run(WorkerClient(address, token).status())
    assert status == {
        "event": "status",
        "ready": True,
        "world_size": 2,
        "backend": "gloo",
        "device": "cpu",  # the app bounds device-dependent specs by it
        "device_name": "cpu",
        "demos": sorted(DEMO_PARAMS),  # every demo the registry found, all_reduce among them
    }


@pytest.mark.demo
def test_a_bad_token_is_refused(demo_worker: WorkerInfo) -> None:
    _, address, _ = demo_worker
    assert run_job(address, "wrong", "all_reduce", {}) == [
        {"event": "error", "message": "bad token"}
    ]
    with pytest.raises(WorkerUnavailable, match="bad token"):
        asyncio.run(WorkerClient(address, "wrong").status())


@pytest.mark.demo
@pytest.mark.parametrize(
    ("params", "field", "bound"),
    [
        ({"size_mib": 0}, "size_mib", "greater than 0"),
        ({"size_mib": 1000}, "size_mib", "less than or equal to 64"),
        ({"iterations": 0}, "iterations", "greater than or equal to 1"),
        ({"size_mib": "lots"}, "size_mib", "valid number"),
        ({"rounds": 3}, "rounds", "Extra inputs are not permitted"),
    ],
)
def test_invalid_params_name_the_field_and_the_bound(
    demo_worker: WorkerInfo, params: dict, field: str, bound: str
) -> None:
    _, address, token = demo_worker
    [event] = run_job(address, token, "all_reduce", params)
    assert event["event"] == "error"
    assert event["message"].startswith("invalid params for all_reduce")
    assert f"{field}: " in event["message"]
    assert bound in event["message"]


def _raw_exchange(address: str, line: bytes) -> list[dict[str, Any]]:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(line)
        with conn.makefile("rb") as reply:
            return [json.loads(answer) for answer in reply]


@pytest.mark.demo
@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"hello\n", "request is not one line of JSON"),
        (b"[1, 2]\n", "request must be a JSON object"),
        (b'{"token": "TOKEN", "op": "dance"}\n', "unknown op 'dance'"),
        (b'{"token": "TOKEN", "op": "run", "demo": ["all_reduce"]}\n', "unknown demo"),
    ],
)
def test_malformed_requests_get_an_error_and_the_worker_carries_on(
    demo_worker: WorkerInfo, line: bytes, message: str
) -> None:
    _, address, token = demo_worker
    [event] = _raw_exchange(address, line.replace(b"TOKEN", token.encode()))
    assert event["event"] == "error"
    assert message in event["message"]
    assert asyncio.run(WorkerClient(address, token).status())["ready"] is True


@pytest.mark.demo
def test_a_status_with_a_deadline_does_not_wait_for_a_running_job(
    demo_worker: WorkerInfo,
) -> None:
    _, address, token = demo_worker
    client = WorkerClient(address, token)

    async def ask_during_a_job() -> float:
        events = client.run("all_reduce", {"size_mib": 64, "iterations": 20})
        assert (await anext(events))["event"] == "accepted"
        started = time.monotonic()
        try:
            with pytest.raises(WorkerUnavailable, match="a long job may be running"):
                await client.status(timeout_s=0.3)
            return time.monotonic() - started
        finally:
            await events.aclose()

    assert asyncio.run(ask_during_a_job()) < 2.0


@pytest.mark.demo
def test_an_unknown_demo_is_refused(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    known = ", ".join(sorted(DEMO_PARAMS))
    assert run_job(address, token, "pipeline_magic", {}) == [
        {"event": "error", "message": f"unknown demo 'pipeline_magic'; known: {known}"}
    ]


@pytest.mark.demo
def test_accepted_echoes_the_validated_params(demo_worker: WorkerInfo) -> None:
    _, address, token = demo_worker
    events = run_job(address, token, "all_reduce", {"size_mib": 1, "iterations": 2})
    accepted = events[0]
    assert accepted["event"] == "accepted"
    assert accepted["demo"] == "all_reduce"
    assert accepted["params"] == {"size_mib": 1.0, "iterations": 2}
    assert (accepted["world_size"], accepted["backend"]) == (2, "gloo")
    assert re.fullmatch(r"[0-9a-f]{12}", accepted["job_id"])
    assert [event["event"] for event in events[1:]] == ["measurement", "measurement", "done"]


@pytest.mark.demo
def test_leaving_mid_job_cancels_it_and_the_worker_stays_healthy(
    demo_worker: WorkerInfo,
) -> None:
    worker, address, token = demo_worker
    client = WorkerClient(address, token)

    async def leave_then_run_again() -> tuple[dict, list[dict]]:
        events = client.run("all_reduce", {"size_mib": 16, "iterations": 20})
        accepted = await anext(events)
        assert (await anext(events))["event"] == "measurement"
        await events.aclose()
        later = [event async for event in client.run("all_reduce", {"iterations": 2})]
        return accepted, later

    accepted, later = asyncio.run(leave_then_run_again())

    assert [event["event"] for event in later] == ["accepted", "measurement", "measurement", "done"]
    assert later[-1]["summary"]["correct"] is True
    log = worker.log_path.read_text()
    cancelled = re.search(rf"job {accepted['job_id']} all_reduce .*: cancelled after (\d+)", log)
    assert cancelled is not None, log
    assert int(cancelled.group(1)) < 20


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.demo
def test_a_job_sent_while_the_worker_starts_waits_for_it_and_stop_leaves_nothing(
    tmp_path: Path,
) -> None:
    address, token = f"127.0.0.1:{free_port()}", "t0ken"
    worker = LocalWorker(address, token, tmp_path / "worker.log", ranks=2, backend="gloo")
    worker.start()
    try:
        client = WorkerClient(address, token, connect_timeout_s=60)
        events = asyncio.run(_collect(client.run("all_reduce", {"iterations": 1})))
        assert [event["event"] for event in events] == ["accepted", "measurement", "done"]
        processes = group_processes(worker.pid)
        assert len(processes) == 3  # the launcher and two ranks
    finally:
        worker.stop()
    assert not worker.running
    assert not any(_alive(pid) for pid in processes)


@pytest.mark.demo
def test_ranks_do_not_outlive_a_killed_launcher(tmp_path: Path) -> None:
    address, token = f"127.0.0.1:{free_port()}", "t0ken"
    worker = LocalWorker(address, token, tmp_path / "worker.log", ranks=2, backend="gloo")
    worker.start()
    try:
        assert worker.wait_ready(90)
        launcher = worker.pid
        ranks = [pid for pid in group_processes(launcher) if pid != launcher]
        assert len(ranks) == 2
        os.kill(launcher, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in ranks) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in ranks)
    finally:
        worker.stop()


async def _collect(events: Any) -> list[dict[str, Any]]:
    return [event async for event in events]
