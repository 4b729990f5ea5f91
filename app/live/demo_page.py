"""What the web app knows about one demo: its page, its parameters, its prediction.

A demo page is a module in app/live/pages/ defining `PAGE = DemoPage(...)`; app/live/router.py
gives every page the same routes. Templates follow the demo's name (`demo`):

- `demos/<demo>.html`: the page, extending `demos/_page.html` (explanation and form fields);
- `demos/_<demo>_run.html`: the panel a Run returns, in this order: `demos/_stream.html` (the
  verdict, which the `done` event fills, and the element that opens the stream); the charts;
  a placeholder for the details; the prediction; and the raw rows' table, inside
  `demos/_raw_rows.html`'s closed disclosure;
- `demos/_<demo>_rows.html`: what one `measurement` event appends to `#rows` (the raw rows);
- `demos/_<demo>_summary.html`: the detailed measured-vs-predicted tables, from the `done`
  event, swapped out of band into their placeholder.

The verdict is the page's `verdict`: the `done` summary as one Check per quantity
(app/live/verdict.py), shown by `demos/_verdict.html` as ✓, or Δ with its reason. A finished
run's raw rows download as CSV and JSON (/demos/runs/<id>/rows.csv and .json,
app/live/raw_rows.py). The verdict's panel includes `demos/_passes.html`, which says where the
page's bytes and times come from (`passes`): the probes that count bytes would slow the steps
they time.

Each is rendered with `params`, `prediction`, `world_size` and, for rows and summary, the
worker's `event` or `summary`, so a recorded run replays through the same templates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from app.live.verdict import Check


@dataclass(frozen=True)
class DemoPage:
    demo: str  # the worker's name for it, as in demos/<demo>.py
    slug: str  # /demos/<slug>
    # title, teaches, passes and the labels are English, marked with N_() where a page module
    # defines them; the templates show them in the reader's language with |t (app.i18n.translate)
    title: str
    teaches: str  # one line for the index
    cards: tuple[str, ...]  # the cards that explain it, first one linked from the page
    params: type[BaseModel]
    labels: Mapping[str, str]  # field name -> label, for form errors
    # (params, world size) -> what the calculators predict; every number comes from app.calc
    predict: Callable[[Any, int], Any]
    # (worker's `done` summary, prediction, backend) -> the verdict, one Check per quantity
    verdict: Callable[[dict[str, Any], Any, str | None], list[Check]]
    # (worker's measurement event, prediction) -> JSON for the page's chart, or None: no chart
    chart_data: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None
    scripts: tuple[str, ...] = field(default=())  # JS under static/ the page loads, after uPlot
    # which figure came from which pass: bytes from counted runs (probes on), times from clean
    # ones (probes off); demos/_passes.html shows it above the run's table
    passes: str = ""

    @property
    def path(self) -> str:
        return f"/demos/{self.slug}"
