"""Backup and restore end to end, on SQLite and on PostgreSQL: the real app in its own
process takes answers over HTTP while `python -m app.admin backup` copies its database; the
backup, restored into a fresh data directory (and a database never used), serves every user,
the group, the recorded demo run and each answer the app acknowledged before the backup
began, and nothing answered after it finished."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from app.config import ROOT_DIR
from app.live.worker_process import LocalWorker
from bench.quiz_durability import ITEM, answer_text, free_port, signed_in_client, start_server
from tests.pg_server import require_server

pytestmark = pytest.mark.demo  # one real all-reduce, on the suite's shared worker

USERS = ("ada", "bob", "cyd")
ANSWERS_BEFORE = 15  # per writer, acknowledged before the backup starts
ANSWERS_AFTER = 3  # per writer, sent once the backup has finished


@dataclass
class Writer:
    """One user answering over and over, one answer at a time, as a tab would."""

    client: httpx.Client
    sent_at: list[float] = field(default_factory=list)  # answer n was sent at sent_at[n]
    acked_at: list[float] = field(default_factory=list)  # ... and acknowledged at acked_at[n]
    error: str = ""

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            n = len(self.sent_at)
            self.sent_at.append(time.monotonic())
            try:
                response = self.client.post(
                    "/quiz/answer",
                    data={"item_id": ITEM, "answer": answer_text(n)},
                    headers={"HX-Request": "true"},
                )
            except httpx.HTTPError as exc:
                self.error = f"answer {n}: {exc!r}"
                return
            if response.status_code != 200 or "Recorded." not in response.text:
                self.error = f"answer {n}: HTTP {response.status_code} {response.text[:300]}"
                return
            self.acked_at.append(time.monotonic())

    def acked_before(self, moment: float) -> int:
        return sum(t < moment for t in self.acked_at)

    def sent_after(self, moment: float) -> list[str]:
        return [answer_text(n) for n, t in enumerate(self.sent_at) if t > moment]


def _admin(data_dir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "app.admin", "--data-dir", str(data_dir), *args]
    return subprocess.run(
        command, cwd=ROOT_DIR, env={**os.environ, **env}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def _databases(kind: str) -> tuple[dict[str, str], dict[str, str]]:
    """The settings that name the app's database and the one restored into: SQLite's files
    follow the data directories; on PostgreSQL the second is new and never migrated."""
    if kind == "sqlite":
        return {}, {}
    server = require_server()
    live = server.url(server.create_database())
    fresh = server.url(server.create_database(template="template0"))
    return {"SHARDLAB_DATABASE_URL": live}, {"SHARDLAB_DATABASE_URL": fresh}


def _independent_check(backup: Path, kind: str) -> None:
    """The file is a consistent snapshot by its own database's tools, not the CLI's."""
    if kind == "sqlite":
        with sqlite3.connect(f"file:{backup}?mode=ro", uri=True) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
        return
    listing = subprocess.run(["pg_restore", "--list", str(backup)], capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr
    assert "TABLE DATA public quizattempt" in listing.stdout


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=15)


def _users_group_and_demo_run(base_url: str) -> tuple[dict[str, httpx.Client], str, str]:
    """Three signed-in users in one group (bob shares his progress) and one recorded run:
    the clients, the group's URL and the run's share link."""
    clients = {name: signed_in_client(base_url, name, register=True) for name in USERS}
    created = clients["ada"].post("/groups", data={"name": "Night owls"})
    assert created.status_code == 303, created.text
    group_url = created.headers["location"]
    code = re.search(r'id="invite-code">(\w+)<', clients["ada"].get(group_url).text)
    assert code
    for name in ("bob", "cyd"):
        joined = clients[name].post("/groups/join", data={"invite_code": code.group(1)})
        assert joined.headers.get("location") == group_url, joined.text
    assert clients["bob"].post(f"{group_url}/sharing", data={"share": "yes"}).status_code == 303
    live = clients["ada"].get(
        "/demos/all-reduce/stream", params={"size_mib": 1, "iterations": 2}, timeout=60
    )
    run_link = re.search(r'href="(/demos/runs/[\w-]+)"', live.text)
    assert run_link and "Finished." in live.text, live.text[-2000:]
    return clients, group_url, run_link.group(1)


def _answer_through_a_backup(
    clients: list[httpx.Client], data: Path, env: dict[str, str], backup: Path
) -> tuple[list[Writer], float, float]:
    """One writer thread per client answers before, during and after a backup subprocess;
    the writers, and when the backup started and finished."""
    stop = threading.Event()
    writers = [Writer(client) for client in clients]
    threads = [threading.Thread(target=w.run, args=(stop,), daemon=True) for w in writers]
    for thread in threads:
        thread.start()
    try:
        _wait_for(
            lambda: all(len(w.acked_at) >= ANSWERS_BEFORE or w.error for w in writers),
            "answers before the backup",
        )
        backup_started = time.monotonic()
        made = _admin(data, env, "backup", str(backup))
        backup_finished = time.monotonic()
        _wait_for(
            lambda: all(
                len(w.sent_after(backup_finished)) > ANSWERS_AFTER or w.error for w in writers
            ),
            "answers after the backup",
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
    assert made.returncode == 0, made.stderr
    assert [w.error for w in writers] == [""] * len(writers)
    # The app went on acknowledging answers while the backup ran.
    assert any(w.acked_before(backup_finished) > w.acked_before(backup_started) for w in writers)
    return writers, backup_started, backup_finished


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_backup_taken_under_load_restores_everything_acknowledged_before_it(
    tmp_path: Path, demo_worker: tuple[LocalWorker, str, str], kind: str
) -> None:
    _, worker_address, worker_token = demo_worker
    data, fresh, backup = tmp_path / "data", tmp_path / "fresh", tmp_path / "backup"
    live_db, fresh_db = _databases(kind)
    port = free_port()
    worker = {"SHARDLAB_WORKER_ADDRESS": worker_address, "SHARDLAB_WORKER_TOKEN": worker_token}
    server = start_server(data, port, {**worker, **live_db})
    try:
        clients, group_url, run_url = _users_group_and_demo_run(f"http://127.0.0.1:{port}")
        writers, backup_started, backup_finished = _answer_through_a_backup(
            list(clients.values()), data, live_db, backup
        )
        for client in clients.values():
            client.close()
    finally:
        _stop(server)

    _independent_check(backup, kind)

    # Into a directory that does not exist yet, as on a new machine.
    restored = _admin(fresh, fresh_db, "restore", str(backup), "--yes")
    assert restored.returncode == 0, restored.stderr
    port = free_port()
    server = start_server(fresh, port, fresh_db)
    try:
        # Read back through the app: each user logs in with their password ...
        base_url = f"http://127.0.0.1:{port}"
        clients = {name: signed_in_client(base_url, name, register=False) for name in USERS}
        for name, writer in zip(USERS, writers, strict=True):
            exported = clients[name].get("/progress/export").json()
            kept = [a["answer_text"] for a in exported["attempts"] if a["item_id"] == ITEM]
            # ... finds every answer acknowledged before the backup started, none sent after
            # it finished, and no gap: answers were sent one at a time, so a snapshot holds
            # the first k of them ...
            assert len(kept) >= writer.acked_before(backup_started), name
            assert not set(kept) & set(writer.sent_after(backup_finished)), name
            assert kept == [answer_text(n) for n in range(len(kept))], name
            # ... and each answer's schedule update, written in the same transaction.
            assert [s["reviews"] for s in exported["states"]] == [len(kept)], name
        group = clients["bob"].get(group_url)
        assert group.status_code == 200
        assert all(f'data-member="{name}"' in group.text for name in USERS)
        assert group.text.count("Progress not shared.") == 2  # bob's opt-in survived
        run_page = clients["cyd"].get(run_url)
        assert run_page.status_code == 200 and 'name="size_mib"' in run_page.text
        replay = clients["cyd"].get(f"{run_url}/events").text
        assert replay.count("event: measurement") == 2  # both iterations' numbers
        for client in clients.values():
            client.close()

        # The running app holds its data directory and database: a second restore is refused.
        refused = _admin(fresh, fresh_db, "restore", str(backup), "--yes")
        assert refused.returncode == 2 and "the app is running" in refused.stderr
    finally:
        _stop(server)
