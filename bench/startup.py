"""How long an app takes to start: create_app (the content read and checked, the routes
built) and its lifespan (the migrations, the engine), the first time in a process and again,
and the parts: the content alone, and the migrations on a fresh SQLite file and on one at the
newest migration already. Also a full collection of the garbage collector's generations right
after start-up, before and after the app freezes what start-up made (app/main.py).

    .venv/bin/python bench/startup.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("SHARDLAB_LOG_LEVEL", "WARNING")

from fastapi.testclient import TestClient  # noqa: E402

from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES  # noqa: E402
from app.config import ROOT_DIR, Settings  # noqa: E402
from app.content import read_content  # noqa: E402
from app.db import migrate  # noqa: E402
from app.main import create_app  # noqa: E402


def _ms(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1000


def _settings() -> Settings:
    return Settings(data_dir=Path(tempfile.mkdtemp()), worker_spawn=False,
                    worker_address="127.0.0.1:1")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="times each warm figure is taken")
    args = parser.parse_args()
    pages = (tuple(CALCULATOR_PAGES), tuple(DEMO_PAGES))
    content = ROOT_DIR / "content"

    first_app = _ms(lambda: create_app(_settings()))
    warm_apps = [_ms(lambda: create_app(_settings())) for _ in range(args.repeat)]
    contents = []
    for _ in range(args.repeat):
        contents.append(_ms(lambda: read_content(content, *pages)))
    fresh, at_head = [], []
    for _ in range(args.repeat):
        database = Path(tempfile.mkdtemp()) / "shardlab.db"
        fresh.append(_ms(lambda database=database: migrate(database)))
        at_head.append(_ms(lambda database=database: migrate(database)))
    lifespans = []
    for _ in range(args.repeat):
        client = TestClient(create_app(_settings()))
        lifespans.append(_ms(client.__enter__))
        client.__exit__(None, None, None)

    gc.unfreeze()
    full_before = _ms(lambda: gc.collect(2))
    tracked = len(gc.get_objects())
    gc.freeze()
    full_after = _ms(lambda: gc.collect(2))
    gc.unfreeze()

    median = statistics.median
    print(f"create_app, first in the process      {first_app:8.0f} ms")
    print(f"create_app, again (median of {args.repeat})       {median(warm_apps):8.0f} ms")
    print(f"the content alone, read anew (median)* {median(contents):8.0f} ms")
    print(f"migrations, fresh SQLite file (median) {median(fresh):8.0f} ms")
    print(f"migrations, file at the newest (median){median(at_head):8.0f} ms")
    print(f"lifespan start, fresh file (median)    {median(lifespans):8.0f} ms")
    print(f"full collection, {tracked:,} objects tracked: {full_before:.0f} ms; "
          f"after gc.freeze(): {full_after:.1f} ms")  # fmt: skip
    print("* the cards themselves are kept per set of files already: questions, glossary, index")


if __name__ == "__main__":
    main()
