"""A cohort's day on ShardLab: N learners, each with an account, for a fixed time.

Each simulated learner registers through the app's own form (its own account and session),
then, until the time is up, waits a think time (exponential, mean --think-s) and does one
thing a learner does: the daily review (the question page, then an answer posted as the page
posts it), a card, a calculator (page, live fragment or JSON API, inputs varied), the
dashboard or progress page, or, now and then, a demo run to its `done` event. Afterwards
every learner's progress export is read back and each acknowledged answer looked for in it:
an answer the app said it kept and did not is a lost answer.

Prints, per kind of request: count, errors, refusals (429, or 503 with Retry-After: the
app's own back-pressure), p50, p99 and max; the p99 over every page, and whether the slow
pages came together (a stall) or spread over the day (a queue); and the answers sent,
acknowledged, stored and lost. --timeline writes every request to a CSV file.

Target: --base-url, say the cohort compose (docs/self-hosting.md, "Cohort mode"); without it
the single-box default is started here, as bench/load.py does: one uvicorn process, a
temporary SQLite file, the local demo worker (--worker-ranks gloo ranks).

Every learner sends its own X-Forwarded-For address (10.77.x.y), as a cohort comes from many
machines; the target must trust the bench as a proxy, or every learner is one address and the
per-address limits (20 registrations an hour) stop the set-up at once. The single box started
here trusts 127.0.0.1; for the cohort compose, reached on its published loopback port through
the network's gateway, start it with SHARDLAB_TRUSTED_PROXIES=172.31.253.1.

    .venv/bin/python bench/cohort.py [--learners 500] [--seconds 600] [--base-url URL]
    .venv/bin/python bench/cohort.py --learners 20 --seconds 30      # a quick check

The bench's own client shares the CPUs with a target on the same machine: it prints the CPU
time it used itself, so that share can be told apart.

One file because a bench is run by its path, alone, on a machine it may be copied to: the
learner's actions, the start of the single box and the report read best in one place.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import random
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "cohort-bench-password"
DEMO_PARAMS = {"size_mib": 1, "iterations": 2}  # a small all-reduce: under a second on CPU
# How often each action is chosen; a demo is set by --demo-share.
ACTIONS = {"review": 0.45, "card": 0.25, "calculator": 0.20, "dashboard": 0.10}
# The stream is not a page: it lasts as long as the run and its place in the line.
NOT_PAGES = {"demo to done"}
# A learner keeps its connection between actions, as a browser does. Both deployments keep an
# idle connection 75 s (uvicorn --timeout-keep-alive); a client reusing one just as the
# server closes it sees it close unanswered, so this client lets an idle one go first. A
# target that closes sooner (uvicorn's default is 5 s) needs --keep-alive-s below its own.
KEEP_ALIVE_S = 60.0
REGISTER_CONCURRENCY = 4  # argon2 hashes: the app computes one per core, the rest wait


def _calculator_request(rng: random.Random) -> tuple[str, str, dict[str, object]]:
    """A calculator request (kind, path, query) with inputs as learners vary them."""
    dp, tp, pp = rng.choice([1, 2, 4, 8, 16, 64]), rng.choice([1, 2, 4, 8]), rng.choice([1, 2])
    preset = rng.choice(["llama3-8b", "llama3-70b"])
    training = {"preset": preset, "dp": dp, "tp": tp, "pp": pp}
    memory = {"params_b": rng.choice([7, 13, 70]), "dp_degree": dp}
    return rng.choice(
        [
            ("calculator page", "/calculators/memory", memory),
            ("calculator fragment", "/calculators/memory/result", memory),
            ("calculator API", "/api/calc/memory", {"params": 7.5e9, "dp_degree": dp}),
            ("calculator page", "/calculators/training-memory", training),
            ("calculator fragment", "/calculators/training-memory/result", training),
            ("calculator API", "/api/calc/training-memory", training),
            ("calculator page", "/calculators/communication", training),
            ("calculator page", "/calculators/pipeline", {"pp": 4, "microbatches": 8}),
        ]
    )


@dataclass
class Tally:
    """Latencies and outcomes per kind of request, for the whole run."""

    errors: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    samples: dict[str, str] = field(default_factory=dict)  # one example of each failure
    # Every request: when it was sent (seconds into the day), its kind, seconds, outcome.
    began: float = field(default_factory=time.perf_counter)
    timeline: list[tuple[float, str, float, str]] = field(default_factory=list)

    def record(self, kind: str, seconds: float, outcome: str, detail: str = "") -> None:
        sent = time.perf_counter() - seconds - self.began
        self.timeline.append((sent, kind, seconds, outcome))
        if outcome == "error":
            self.errors[kind] += 1
            self.samples.setdefault(f"{kind}: {detail[:60]}", detail[:300])
        elif outcome == "refused":
            self.refused[kind] += 1
            self.samples.setdefault(f"{kind} refused: {detail[:60]}", detail[:300])

    def latencies_s(self) -> dict[str, list[float]]:
        """Each kind's latencies, from the timeline."""
        by_kind: dict[str, list[float]] = defaultdict(list)
        for _sent, kind, seconds, _outcome in self.timeline:
            by_kind[kind].append(seconds)
        return by_kind


def _outcome(response: httpx.Response) -> str:
    if response.status_code == 200:
        return "ok"
    refusal = response.status_code == 429 or (
        response.status_code == 503 and "Retry-After" in response.headers
    )
    return "refused" if refusal else "error"


def _detail(response: httpx.Response) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.text))
    return f"{response.status_code} {response.request.url.path}: {text.strip()[:240]}"


@dataclass(frozen=True)
class Day:
    """What every learner's day shares: the cards, the demo share, the pace and the end."""

    cards: list[str]
    demo_share: float
    think_s: float
    deadline: float  # time.perf_counter() at the end


@dataclass
class Learner:
    name: str
    client: httpx.AsyncClient
    rng: random.Random
    acknowledged: Counter = field(default_factory=Counter)  # item id: answers the app kept
    unacknowledged: int = 0  # sent, but no 200 came back (may or may not be stored)

    async def get(
        self, tally: Tally, kind: str, path: str, **kwargs: object
    ) -> httpx.Response | None:
        return await self.send(tally, kind, "GET", path, **kwargs)

    async def send(
        self, tally: Tally, kind: str, method: str, path: str, **kwargs: object
    ) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            tally.record(kind, time.perf_counter() - started, "error", f"{path}: {exc!r}")
            return None
        outcome = _outcome(response)
        # Only a failure is described: stripping a page's tags takes about 1 ms, a sixth of
        # this client's CPU per request, and the client shares the machine with the target.
        detail = "" if outcome == "ok" else _detail(response)
        tally.record(kind, time.perf_counter() - started, outcome, detail)
        return response


def _answer_fields(page: str, rng: random.Random) -> dict[str, str] | None:
    """What the review's answer form posts for the question on `page`, answered as a learner
    might (an option, a rating, a number or a few sentences); None when no question is shown."""
    start = page.find('hx-post="/quiz/answer"')
    if start < 0:
        return None
    form = page[start : page.index("</form>", start)]
    fields = {
        name: html.unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form)
    }
    if 'name="rating"' in form:
        fields["rating"] = str(rng.choice([2, 3, 3, 4]))
    elif 'name="response"' in form:
        fields["response"] = "Shard the optimizer states across the data-parallel ranks."
        fields["compared"] = "1"
    elif options := re.findall(r'name="option" value="(\d+)"', form):
        fields["option"] = rng.choice(options)
    elif choices := re.findall(r'name="answer" value="(\d+)"', form):
        fields["answer"] = rng.choice(choices)
    else:
        fields["answer"] = str(rng.choice([1, 16, 140, 1.5e9]))
    return fields


async def review(learner: Learner, tally: Tally, day: Day) -> None:
    """The question page, a moment to answer, and the answer posted as htmx posts it."""
    page = await learner.get(tally, "quiz page", "/quiz")
    if page is None or page.status_code != 200:
        return
    fields = _answer_fields(page.text, learner.rng)
    if fields is None:  # today's review is done: practise instead
        page = await learner.get(tally, "quiz page", "/quiz", params={"mode": "practice"})
        if page is None or page.status_code != 200:
            return
        fields = _answer_fields(page.text, learner.rng)
        if fields is None:
            tally.record("answer", 0.0, "error", "no question on /quiz?mode=practice")
            return
    # Reading and answering take a moment; at the end of the run, the answer goes at once.
    pause = learner.rng.uniform(0.2, 1.0) * day.think_s
    await asyncio.sleep(max(0.0, min(pause, day.deadline - time.perf_counter())))
    response = await learner.send(
        tally, "answer", "POST", "/quiz/answer", data=fields, headers={"HX-Request": "true"}
    )
    kept = response is not None and response.status_code == 200
    # The answer's result carries its undo form, which names the stored attempt.
    if kept and 'name="attempt_id"' in response.text:
        learner.acknowledged[fields["item_id"]] += 1
    else:
        learner.unacknowledged += 1


async def run_demo(learner: Learner, tally: Tally) -> None:
    """The run panel, then the stream read to its `done` event."""
    panel = await learner.get(
        tally,
        "demo panel",
        "/demos/all-reduce/run",
        params=DEMO_PARAMS,
        headers={"HX-Request": "true"},
    )
    if panel is None or panel.status_code != 200:
        return
    started, text = time.perf_counter(), []
    try:
        async with learner.client.stream(
            "GET", "/demos/all-reduce/stream", params=DEMO_PARAMS, timeout=180
        ) as stream:
            if stream.status_code != 200:
                await stream.aread()
                tally.record(
                    "demo to done", time.perf_counter() - started, _outcome(stream), _detail(stream)
                )
                return
            async for line in stream.aiter_lines():
                text.append(line)
                if line.startswith("event: done"):
                    break
    except httpx.HTTPError as exc:
        tally.record("demo to done", time.perf_counter() - started, "error", repr(exc))
        return
    body = "\n".join(text)
    # The stream always ends with `done`: how the run went is in the events before it.
    if "Finished." in body:
        outcome, detail = "ok", ""
    elif "Not started." in body:  # the line was full: refused, and said so
        outcome, detail = "refused", re.sub(r"<[^>]+>", " ", body)[-300:]
    else:
        outcome, detail = "error", re.sub(r"<[^>]+>", " ", body)[-300:]
    tally.record("demo to done", time.perf_counter() - started, outcome, detail)


async def act(learner: Learner, tally: Tally, day: Day) -> None:
    rng = learner.rng
    if rng.random() < day.demo_share:
        await run_demo(learner, tally)
        return
    action = rng.choices(list(ACTIONS), weights=list(ACTIONS.values()))[0]
    if action == "review":
        await review(learner, tally, day)
    elif action == "card":
        await learner.get(tally, "card page", f"/cards/{rng.choice(day.cards)}")
    elif action == "calculator":
        kind, path, query = _calculator_request(rng)
        headers = {"HX-Request": "true"} if kind == "calculator fragment" else {}
        await learner.get(tally, kind, path, params=query, headers=headers)
    else:
        await learner.get(tally, "dashboard", rng.choice(["/", "/progress"]))


async def register(learner: Learner) -> str | None:
    """Registers through the form (GET for its token, POST); None, or why it failed."""
    for _attempt in range(10):
        form = await learner.client.get("/register")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        if token is None:
            return f"no register form: {_detail(form)}"
        response = await learner.client.post(
            "/register",
            data={"username": learner.name, "password": PASSWORD, "csrf_token": token.group(1)},
        )
        if response.status_code == 303:
            return None
        if response.status_code == 503 and "Retry-After" in response.headers:
            await asyncio.sleep(1)  # every hashing place taken: wait as a browser user would
            continue
        return _detail(response)
    return "the app stayed busy (503) for 10 tries"


def _address(index: int) -> str:
    return f"10.77.{index // 250}.{index % 250 + 1}"


async def make_learners(base_url: str, count: int, seed: int, keep_alive_s: float) -> list[Learner]:
    run_id = secrets.token_hex(3)  # fresh names, so a target can be benched again
    learners = []
    for i in range(count):
        name = f"cohort-{run_id}-{i}"
        headers = {"X-Forwarded-For": _address(i)}
        limits = httpx.Limits(keepalive_expiry=keep_alive_s)
        client = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60, limits=limits)
        learners.append(Learner(name, client, random.Random(seed + i)))
    gate = asyncio.Semaphore(REGISTER_CONCURRENCY)

    async def one(learner: Learner) -> str | None:
        async with gate:
            return await register(learner)

    problems = await asyncio.gather(*(one(learner) for learner in learners))
    failed = [(lr.name, p) for lr, p in zip(learners, problems, strict=True) if p]
    if failed:
        for learner in learners:
            await learner.client.aclose()
        hint = ""
        if any(p.startswith("429") for _, p in failed):
            hint = (
                "\nEvery learner counts as one address: start the target with "
                "SHARDLAB_TRUSTED_PROXIES naming this machine as it connects (see --help)."
            )
        raise SystemExit(f"{len(failed)} of {count} registrations failed, first: {failed[0]}{hint}")
    return learners


async def card_ids(base_url: str) -> list[str]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        index = await client.get("/cards")
    index.raise_for_status()
    found = set(re.findall(r'href="/cards/([a-z0-9][a-z0-9-]*)"', index.text))
    return sorted(found - {"search", "map", "cheatsheet"})


async def stored_answers(learner: Learner) -> Counter:
    """The learner's attempts, by item, from their progress export (retried while the app
    answers 503, as an export takes one of the few heavy-work places, or answers nothing in
    time: an overloaded server is still working through requests its clients gave up on)."""
    why = "no answer within 120 s, 30 times"
    for _attempt in range(30):
        try:
            response = await learner.client.get("/progress/export", timeout=120)
        except httpx.TimeoutException:
            continue
        if response.status_code == 200:
            return Counter(a["item_id"] for a in response.json()["attempts"])
        why = _detail(response)
        if response.status_code != 503:
            break
        await asyncio.sleep(1)
    raise SystemExit(f"could not read {learner.name}'s progress: {why}")


async def bench(args: argparse.Namespace, base_url: str) -> int:
    cards = await card_ids(base_url)
    started = time.perf_counter()
    learners = await make_learners(base_url, args.learners, args.seed, args.keep_alive_s)
    print(
        f"{len(learners)} learners registered in {time.perf_counter() - started:.0f} s; "
        f"{len(cards)} cards; running for {args.seconds:g} s"
    )
    tally = Tally()
    began = tally.began
    day = Day(cards, args.demo_share, args.think_s, began + args.seconds)

    async def learner_day(learner: Learner) -> None:
        # Arrivals spread over the first think time, not all in the same second.
        await asyncio.sleep(learner.rng.uniform(0, day.think_s))
        while time.perf_counter() < day.deadline:
            await act(learner, tally, day)
            pause = min(learner.rng.expovariate(1 / day.think_s), 5 * day.think_s)
            await asyncio.sleep(max(0.0, min(pause, day.deadline - time.perf_counter())))

    await asyncio.gather(*(learner_day(learner) for learner in learners))
    elapsed = time.perf_counter() - began

    stored: list[tuple[Learner, Counter]] = []
    gate = asyncio.Semaphore(4)

    async def read_back(learner: Learner) -> None:
        async with gate:
            stored.append((learner, await stored_answers(learner)))

    await asyncio.gather(*(read_back(learner) for learner in learners))
    for learner in learners:
        await learner.client.aclose()
    report(tally, elapsed, stored)
    if args.timeline:
        with Path(args.timeline).open("w") as out:
            out.write("sent_s,kind,ms,outcome\n")
            for sent, kind, seconds, outcome in tally.timeline:
                out.write(f"{sent:.3f},{kind},{1000 * seconds:.1f},{outcome}\n")
    failed = sum(tally.errors.values())
    lost = sum(_lost(learner, kept) for learner, kept in stored)
    return 1 if failed or lost else 0


def _lost(learner: Learner, kept: Counter) -> int:
    return sum(max(0, n - kept[item]) for item, n in learner.acknowledged.items())


def _percentile_ms(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(tally: Tally, elapsed_s: float, stored: list[tuple[Learner, Counter]]) -> None:
    latencies = tally.latencies_s()
    total = len(tally.timeline)
    print(f"{total} requests in {elapsed_s:.0f} s ({total / elapsed_s:.1f}/s)")
    print(
        f"{'kind':<22}{'requests':>9}{'errors':>8}{'refused':>9}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'max ms':>9}"
    )
    for kind in sorted(latencies):
        values = latencies[kind]
        print(
            f"{kind:<22}{len(values):>9}{tally.errors[kind]:>8}{tally.refused[kind]:>9}"
            f"{_percentile_ms(values, 0.5):>9.1f}{_percentile_ms(values, 0.99):>9.1f}"
            f"{1000 * max(values):>9.1f}"
        )
    pages = [s for kind, v in latencies.items() if kind not in NOT_PAGES for s in v]
    if pages:
        print(
            f"every page: p50 {_percentile_ms(pages, 0.5):.1f} ms, "
            f"p99 {_percentile_ms(pages, 0.99):.1f} ms"
        )
        print(_when_slow(tally))
    print(f"errors: {sum(tally.errors.values())}, refused: {sum(tally.refused.values())}")
    for sample in list(tally.samples.values())[:8]:
        print(f"  e.g. {sample}")
    acknowledged = sum(sum(learner.acknowledged.values()) for learner, _ in stored)
    unacknowledged = sum(learner.unacknowledged for learner, _ in stored)
    kept = sum(sum(k.values()) for _, k in stored)
    lost = sum(_lost(learner, k) for learner, k in stored)
    print(
        f"answers: {acknowledged + unacknowledged} sent, {acknowledged} acknowledged, "
        f"{kept} stored, {lost} lost"
    )
    # This process only (the single box's server is another), its set-up included.
    print(f"the bench's own CPU: {time.process_time():.1f} s")


def _when_slow(tally: Tally, slow_s: float = 0.3, window_s: float = 10.0) -> str:
    """Whether the slow pages came together (a stall: every request waits at once) or spread
    over the day (a queue that is long throughout): how many of the day's windows hold them."""
    sent = [t for t, kind, s, _ in tally.timeline if kind not in NOT_PAGES and s > slow_s]
    if not sent:
        return f"no page took over {1000 * slow_s:.0f} ms"
    windows = Counter(int(t // window_s) for t in sent)
    in_day = max(1, int(max(t for t, *_ in tally.timeline) // window_s) + 1)
    top = ", ".join(f"{w * window_s:.0f} s: {n}" for w, n in windows.most_common(3))
    return (
        f"pages over {1000 * slow_s:.0f} ms: {len(sent)}, in {len(windows)} of the day's {in_day} "
        f"{window_s:.0f}-s windows; the most in one: {top}"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def single_box(worker_ranks: int) -> Iterator[str]:
    """The default deployment: one uvicorn process, SQLite in a temporary data directory and
    the local demo worker, trusting the bench (127.0.0.1) for its learners' addresses."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {
            **os.environ,
            "SHARDLAB_DATA_DIR": data_dir,
            "SHARDLAB_WORKER_RANKS": str(worker_ranks),
            "SHARDLAB_TRUSTED_PROXIES": "127.0.0.1",
        }
        log_path = Path(data_dir) / "server.log"
        with log_path.open("w") as log:
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "--factory",
                    "app.main:create_app",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--no-proxy-headers",
                    "--loop",
                    "asyncio",
                    "--timeout-keep-alive",
                    "75",
                    "--log-level",
                    "warning",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=log,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_for_worker(base, server, log_path)
            yield base
        finally:
            server.terminate()
            server.wait(timeout=30)


def _wait_for_worker(base: str, server: subprocess.Popen, log_path: Path) -> None:
    """Until /healthz says the worker is up (the app serves pages before its ranks meet)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the app exited:\n{log_path.read_text()[-3000:]}")
        try:
            if "ok" in str(httpx.get(base + "/healthz", timeout=5).json().get("worker")):
                return
        except (httpx.TransportError, ValueError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"the demo worker did not come up:\n{log_path.read_text()[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--learners", type=int, default=500, help="simulated learners (500)")
    parser.add_argument("--seconds", type=float, default=600, help="how long they work (600)")
    parser.add_argument(
        "--think-s",
        type=float,
        default=10.0,
        help="mean pause between a learner's actions, seconds (10)",
    )
    parser.add_argument(
        "--demo-share", type=float, default=0.01, help="the share of actions that run a demo (0.01)"
    )
    parser.add_argument("--base-url", help="a running ShardLab; unset: start the single box")
    parser.add_argument(
        "--worker-ranks", type=int, default=2, help="ranks of the single box's local worker (2)"
    )
    parser.add_argument("--seed", type=int, default=31, help="the learners' random choices")
    parser.add_argument(
        "--keep-alive-s",
        type=float,
        default=KEEP_ALIVE_S,
        help="how long a learner keeps an idle connection, seconds; below the target's own "
        f"keep-alive ({KEEP_ALIVE_S:g})",
    )
    parser.add_argument(
        "--timeline",
        metavar="CSV",
        help="write every request to this file: when it was sent, its kind, ms and outcome",
    )
    args = parser.parse_args()
    if args.base_url:
        print(f"target: {args.base_url}")
        return asyncio.run(bench(args, args.base_url.rstrip("/")))
    with single_box(args.worker_ranks) as base_url:
        print(
            f"target: the single box (1 uvicorn process, SQLite, {args.worker_ranks} gloo "
            f"ranks) on {base_url}; {os.cpu_count()} CPUs"
        )
        return asyncio.run(bench(args, base_url))


if __name__ == "__main__":
    sys.exit(main())
