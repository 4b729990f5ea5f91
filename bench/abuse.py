"""A well-behaved visitor's latency while hostile clients attack the same server (issue #25).

Starts the image's server (its uvicorn command, in a process of its own, with a local demo
worker of two gloo ranks and a temporary SQLite file) on a free loopback port. The bench
plays the reverse proxy too: the server trusts 127.0.0.1 (SHARDLAB_TRUSTED_PROXIES), and each
client's requests carry the X-Forwarded-For a proxy would append, so the attackers come from
198.51.100.66 and the visitor from 203.0.113.7 (documentation addresses), and an attacker's
own forged values are written in front, as a proxy passes them on.

For --seconds, while the visitor signs in and browses cards, calculators, the quiz and the
progress page with a short pause between pages, the attackers send, each without pause:

  big-body     a 3.3 MB JSON object of 300,000 keys, then 20 MB, to the planner's API
  many-keys    4,500 unknown keys in 53 KB, inside the byte limit, to the planner's API
  cold-search  DeepSeek-V3 planner searches the server has not cached (1.5 to 3 s each)
  sign-ups     new accounts with a new forged X-Forwarded-For value each time
  log-ins      wrong passwords for the visitor's username
  imports      a 19.5 MB progress file of 90,000 made-up states, as a signed-in attacker
  demo-hogs    the attacker's accounts each start the longest demo run, again and again

and it prints the visitor's p50, p99 and worst latency and its errors (any answer but 2xx or
a redirect), what each attack was answered, and whether the visitor could still sign in and
start a demo. The goal (issue #25): p99 under 200 ms and no errors.

    .venv/bin/python bench/abuse.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
ATTACKER = "198.51.100.66"
VISITOR = "203.0.113.7"
PASSWORD = "a-long-enough-password"
VISITOR_PAGES = [
    "/",
    "/cards",
    "/cards/zero-stages",
    "/calculators/training-memory/result?preset=llama3-70b&dp=4&tp=8&pp=2",
    "/calculators/planner?preset=llama3-8b",
    "/quiz",
    "/progress",
    "/glossary",
]
DEMO_HOGS = 6  # attacker accounts, each trying to hold a place in the demo line
# The longest demo run the bounds allow: the DDP-vs-ZeRO demo at its largest
# (demos/specs/zero_stages.py).
HOG_DEMO = "/demos/ddp-vs-zero/stream"
HOG_PARAMS = {"width": 128, "layers": 4, "vocab": 1024, "seq_len": 64, "batch": 8, "steps": 6,
              "model_scale": 8}  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _server(data_dir: Path) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "SHARDLAB_DATA_DIR": str(data_dir),
        "SHARDLAB_WORKER_RANKS": "2",
        "SHARDLAB_WORKER_ADDRESS": f"127.0.0.1:{_free_port()}",
        "SHARDLAB_TRUSTED_PROXIES": "127.0.0.1",
        "SHARDLAB_LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "uvicorn", "--factory", "app.main:create_app",
               "--host", "127.0.0.1", "--port", str(port), "--no-proxy-headers",
               "--loop", "asyncio", "--log-level", "warning"]  # fmt: skip
    log = (data_dir.parent / "server.log").open("w")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start: see {log.name}")
            time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _client(base: str, address: str, forged: str | None = None) -> httpx.Client:
    hops = f"{forged}, {address}" if forged else address
    return httpx.Client(base_url=base, timeout=120, headers={"X-Forwarded-For": hops})


def _token(client: httpx.Client, page: str = "/login") -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', client.get(page).text)
    assert match, f"no csrf_token on {page}"
    return match[1]


def _sign_up(client: httpx.Client, username: str) -> int:
    form = {"username": username, "password": PASSWORD, "csrf_token": _token(client, "/register")}
    return client.post("/register", data=form).status_code


def _log_in(client: httpx.Client, username: str, password: str) -> int:
    form = {"username": username, "password": password, "csrf_token": _token(client)}
    return client.post("/login", data=form).status_code


class Attack:
    """One hostile client: `send` in a loop until stopped, each answer's status counted."""

    def __init__(self, name: str, send: Callable[[], int]) -> None:
        self.name = name
        self.send = send
        self.answers: Counter[str] = Counter()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.stop = threading.Event()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.answers[str(self.send())] += 1
            except Exception as exc:  # a refused upload may end the connection: counted too
                self.answers[type(exc).__name__] += 1
                time.sleep(0.5)


def _big_body(base: str) -> Callable[[], int]:
    client = _client(base, ATTACKER)
    bodies = [
        json.dumps({f"key{i}": i for i in range(300_000)}).encode(),
        b"[" + b"0," * 10_000_000 + b"0]",
    ]
    turn = iter(range(10**9))

    def send() -> int:
        body = bodies[next(turn) % 2]
        headers = {"content-type": "application/json"}
        return client.post("/api/calc/planner", content=body, headers=headers).status_code

    return send


def _many_keys(base: str) -> Callable[[], int]:
    client = _client(base, ATTACKER)
    body = json.dumps({f"k{i}": 0 for i in range(4500)})
    headers = {"content-type": "application/json"}
    return lambda: client.post("/api/calc/planner", content=body, headers=headers).status_code


def _cold_search(base: str) -> Callable[[], int]:
    client = _client(base, ATTACKER)

    def send() -> int:
        body = {"run": "deepseek-v3", "matmul_efficiency": round(random.uniform(0.3, 0.9), 6)}
        return client.post("/api/calc/planner", json=body).status_code

    return send


def _sign_ups(base: str) -> Callable[[], int]:
    count = iter(range(10**9))

    def send() -> int:
        n = next(count)
        forged = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
        with _client(base, ATTACKER, forged=forged) as client:
            return _sign_up(client, f"sock{n}")

    return send


def _log_ins(base: str) -> Callable[[], int]:
    count = iter(range(10**9))

    def send() -> int:
        with _client(base, ATTACKER, forged=f"10.9.9.{next(count) % 256}") as client:
            return _log_in(client, "visitor", "not-the-password")

    return send


def _imports(base: str) -> Callable[[], int]:
    client = _client(base, ATTACKER)
    _sign_up(client, "importer")
    now = "2026-01-01T00:00:00+00:00"
    card = {"card_id": 1, "state": 2, "step": None, "stability": 3.0, "difficulty": 5.0,
            "due": now, "last_review": now}  # fmt: skip
    states = [{"item_id": f"made-up-{i}", "fsrs_card": card, "reviews": 1, "lapses": 0}
              for i in range(90_000)]  # fmt: skip
    document = json.dumps({"format": "shardlab-progress", "version": 2, "exported_at": now,
                           "states": states, "attempts": []})  # fmt: skip

    def send() -> int:
        files = {"file": ("progress.json", document.encode(), "application/json")}
        token = _token(client, "/progress")
        return client.post("/progress/import", files=files, data={"csrf_token": token}).status_code

    return send


def _demo_hog(base: str, n: int) -> Callable[[], int]:
    client = _client(base, ATTACKER)
    status = _sign_up(client, f"hog{n}")

    def send() -> int:
        if status not in (200, 303):
            time.sleep(1)
            return status
        # The stream answers 200 at once; whether the run got a place shows in its events.
        with client.stream("GET", HOG_DEMO, params=HOG_PARAMS) as response:
            text = "".join(response.iter_text())
        if "busy" in text or "already have" in text:
            time.sleep(0.5)
            return 429  # counted as refused a place
        return response.status_code

    return send


def _visit(base: str, seconds: float) -> tuple[list[float], Counter[str], list[str]]:
    times: list[float] = []
    errors: Counter[str] = Counter()
    notes: list[str] = []
    slowest: list[tuple[float, str]] = []
    with _client(base, VISITOR) as visitor:
        deadline = time.monotonic() + seconds
        pages = iter(lambda: random.choice(VISITOR_PAGES), None)
        while time.monotonic() < deadline:
            page = next(pages)
            start = time.perf_counter()
            try:
                response = visitor.get(page)
                status = response.status_code
            except httpx.HTTPError as exc:
                errors[f"{page}: {type(exc).__name__}"] += 1
                continue
            times.append(time.perf_counter() - start)
            slowest.append((times[-1], page))
            if status >= 400:
                errors[f"{page}: {status}"] += 1
            time.sleep(0.1)
        slow = ", ".join(f"{page} {t * 1e3:.0f} ms" for t, page in sorted(slowest)[-3:])
        notes.append(f"slowest pages: {slow}")
        # After the attack's log-ins on its name, the visitor still gets in from its address.
        visitor.cookies.clear()
        notes.append(f"visitor's log-in after the attack: {_log_in(visitor, 'visitor', PASSWORD)}")
    return times, errors, notes


def _attack(base: str, seconds: float) -> None:
    """The attackers, in a process of their own (so their work does not slow the visitor's
    measuring); prints what each was answered, as JSON, when `seconds` are up."""
    attacks = [
        Attack("big-body", _big_body(base)),
        Attack("many-keys", _many_keys(base)),
        Attack("cold-search", _cold_search(base)),
        Attack("sign-ups", _sign_ups(base)),
        Attack("log-ins", _log_ins(base)),
        Attack("imports", _imports(base)),
        *(Attack(f"demo-hog-{n}", _demo_hog(base, n)) for n in range(DEMO_HOGS)),
    ]
    for attack in attacks:
        attack.thread.start()
    time.sleep(seconds)
    for attack in attacks:
        attack.stop.set()
    print(json.dumps({attack.name: dict(attack.answers) for attack in attacks}), flush=True)
    os._exit(0)  # the daemon threads may be inside a long request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--attack", metavar="BASE_URL", help=argparse.SUPPRESS)
    parser.add_argument("--no-attack", action="store_true", help="the visitor alone, to compare")
    args = parser.parse_args()
    if args.attack:
        if not args.seconds:
            print("{}", flush=True)
            return None
        return _attack(args.attack, args.seconds)
    tmp = tempfile.TemporaryDirectory(prefix="shardlab-abuse-")
    with tmp, _server(Path(tmp.name) / "data") as base:
        with _client(base, VISITOR) as visitor:
            assert _sign_up(visitor, "visitor") in (200, 303)
        seconds = 0 if args.no_attack else args.seconds + 3
        attackers = subprocess.Popen(
            [sys.executable, __file__, "--attack", base, "--seconds", str(seconds)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(3.0)  # under way: accounts made, first requests sent
        times, errors, notes = _visit(base, args.seconds)
        answers = json.loads(attackers.communicate(timeout=300)[0].strip().splitlines()[-1])
        # The visitor's own demo: a place in the line whatever the hogs hold.
        with _client(base, VISITOR) as visitor:
            _log_in(visitor, "visitor", PASSWORD)
            with visitor.stream("GET", "/demos/collectives/stream") as response:
                text = "".join(response.iter_text())
            got_place = "busy" not in text and "already have" not in text
            notes.append(f"visitor's demo got a place in the line: {got_place}")
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    under = "alone" if args.no_attack else "under attack"
    print(f"visitor: {len(times)} pages in {args.seconds:.0f} s {under}; "
          f"p50 {statistics.median(times) * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, "
          f"worst {times[-1] * 1e3:.0f} ms; errors: {sum(errors.values())}")  # fmt: skip
    for what, count in errors.most_common():
        print(f"  error {what} x{count}")
    for note in notes:
        print(f"  {note}")
    for name, answered in answers.items():
        listed = ", ".join(f"{status} x{n}" for status, n in sorted(answered.items()))
        print(f"attack {name}: {listed}")


if __name__ == "__main__":
    main()
