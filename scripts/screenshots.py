"""Takes the README's screenshots (docs/screenshots/<page>-<width>.png) from a real server.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

Starts the app on a free port with a fresh SQLite file and its own demo worker (2 gloo
ranks), then drives Debian's chromium: the home page as a visitor; a learner who registers,
sets an interview date, answers a few questions and runs a demo; then the dashboard, a demo's
verdict, a quiz question, the progress page, a step of the path and a card's "Check yourself"
box, each at 1280 and 390 px wide (what fits
above the fold: 1280×800 and 390×844). Needs the test extras (Playwright) and chromium, as
the browser tests do; Chinese pages need a CJK font (fonts-wqy-microhei).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.main import create_app  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.e2e.learner import answer_any, register  # noqa: E402
from tests.utils import free_port, make_settings, serving  # noqa: E402

VIEWPORTS = {1280: 800, 390: 844}


def shoot(page: Page, out: Path, name: str, url: str | None = None) -> None:
    for width, height in VIEWPORTS.items():
        page.set_viewport_size({"width": width, "height": height})
        if url:
            page.goto(url)
            page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out / f"{name}-{width}.png"))
        print(out / f"{name}-{width}.png")


def shoot_here(page: Page, out: Path, name: str, selector: str) -> None:
    """Like shoot, but at each width scrolled to the first `selector` on the current page."""
    for width, height in VIEWPORTS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.locator(selector).first.evaluate("e => e.scrollIntoView({block: 'center'})")
        page.screenshot(path=str(out / f"{name}-{width}.png"))
        print(out / f"{name}-{width}.png")


def answer_some(page: Page, base: str, count: int) -> None:
    for _ in range(count):
        page.goto(f"{base}/quiz")
        if not page.locator("#question").count():
            return
        answer_any(page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="shardlab-shots-"))
    settings = make_settings(data_dir / "data", worker_spawn=True,
                             worker_address=f"127.0.0.1:{free_port()}", worker_ranks=2)  # fmt: skip
    try:
        with serving(create_app(settings), startup_s=60) as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            shoot(page, args.out, "home", f"{base}/")
            register(page, base)
            page.goto(f"{base}/plan")
            interview = (datetime.now(UTC).date() + timedelta(days=21)).isoformat()
            page.fill("input[name=interview_date]", interview)
            page.fill("input[name=minutes_per_day]", "60")
            page.click("#plan-form button[type=submit]")
            shoot(page, args.out, "plan", f"{base}/plan")
            answer_some(page, base, 6)
            shoot(page, args.out, "dashboard", f"{base}/")
            page.goto(f"{base}/quiz")
            shoot(page, args.out, "quiz")
            shoot(page, args.out, "progress", f"{base}/progress")
            # A step of the path with its card read (ticked), and the card's first check box.
            page.goto(f"{base}/path/1")
            page.click("#part-card")
            shoot_here(page, args.out, "card-check", ".card-check")
            shoot(page, args.out, "step", f"{base}/path/1")
            page.set_viewport_size({"width": 1280, "height": 800})
            page.goto(f"{base}/demos/all-reduce")
            page.fill("input[name=size_mib]", "1")
            page.fill("input[name=iterations]", "3")
            page.click("#run-demo")
            page.wait_for_selector("#demo-chart canvas", timeout=60_000)
            page.evaluate("window.scrollTo(0, 0)")
            shoot(page, args.out, "demo-verdict")
            browser.close()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
