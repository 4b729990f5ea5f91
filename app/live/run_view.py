"""How a demo run shows on its page: each worker event as HTML fragments for htmx (and the
chart's points), the same for a live run and for one replayed from the database; and the
cards a demo page points to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.sse import ServerSentEvent
from pydantic import BaseModel

from app.i18n import gettext
from app.language import request_language
from app.live.demo_page import DemoPage
from app.live.verdict import reason_lines, tally
from app.templating import templates


def _render(request: Request, template: str, **context: Any) -> str:
    return templates.get_template(template).render(request=request, **context)


def html_event(request: Request, template: str, **context: Any) -> ServerSentEvent:
    return ServerSentEvent(raw_data=_render(request, template, **context))


def status_event(request: Request, text: str) -> ServerSentEvent:
    return html_event(request, "demos/_status.html", text=text)


def failure_event(request: Request, message: str) -> ServerSentEvent:
    return html_event(request, "demos/_failure.html", message=message)


@dataclass
class RunView:
    """Turns a run's worker events into what the page shows: live, or replayed from the DB."""

    request: Request
    page: DemoPage
    params: BaseModel
    run_id: str
    world_size: int | None = None
    backend: str | None = None
    prediction: Any = None
    measurements: int = 0
    rows: int = 0

    def accepted(self, world_size: int, backend: str | None) -> None:
        self.world_size = world_size
        self.backend = backend
        self.prediction = self.page.predict(self.params, world_size)

    def render(self, event: dict[str, Any]) -> list[ServerSentEvent]:
        context = {
            "params": self.params,
            "prediction": self.prediction,
            "world_size": self.world_size,
            "run_id": self.run_id,
        }
        kind = event.get("event")
        if kind == "measurement" and self.prediction is not None:
            self.measurements += 1
            self.rows += len(event.get("ranks", []))
            template = f"demos/_{self.page.demo}_rows.html"
            shown = [
                html_event(self.request, template, event=event, **context),
                html_event(self.request, "demos/_progress.html",
                            measurements=self.measurements, rows=self.rows),
            ]  # fmt: skip
            if self.page.chart_data is not None:
                data = self.page.chart_data(event, self.prediction)
                shown.append(ServerSentEvent(event="measurement", data=data))
            return shown
        if kind == "done":
            template = f"demos/_{self.page.demo}_summary.html"
            summary = event["summary"]
            shown = [html_event(self.request, template, summary=summary, **context)]
            if self.prediction is not None:
                checks = self.page.verdict(summary, self.prediction, self.backend)
                lines = list(zip(checks, reason_lines(checks), strict=True))
                verdict = {"rows": lines, "tally": tally(checks)}
                shown.append(html_event(self.request, "demos/_verdict.html", **verdict))
            return shown + [
                html_event(self.request, "demos/_share.html", run_id=self.run_id),
                self._downloads(),
                status_event(self.request, gettext("Finished.")),
            ]
        if kind == "error":
            shown = [
                failure_event(self.request, str(event.get("message", gettext("the demo failed")))),
                status_event(self.request, gettext("Failed.")),
            ]
            if self.rows:  # the rows measured before the failure are kept with the run
                shown.append(self._downloads())
            return shown
        return []

    def _downloads(self) -> ServerSentEvent:
        return html_event(self.request, "demos/_downloads.html", run_id=self.run_id, oob=True)


def card_links(request: Request, page: DemoPage) -> list[tuple[str, str]]:
    """(id, short title in the page's language) of the cards a demo page points to."""
    cards, lang = request.app.state.cards, request_language(request)
    found = [cards.shown_in(card_id, lang) for card_id in page.cards]
    return [(card.meta.id, card.meta.short_title) for card in found if card is not None]
