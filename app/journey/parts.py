"""The four parts of a step (read the card, work the numbers, watch it run, answer the
questions): the pages they live on, and which of them a signed-in learner has done."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, select

from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES
from app.journey.models import CardVisit
from app.journey.syllabus import Step
from app.live.models import DemoRun
from app.live.pages import DEMO_PAGES as LIVE_DEMO_PAGES


@dataclass(frozen=True)
class StepPages:
    """The paths of a step's pages; None where its card has no calculator or no demo."""

    card: str
    calculator: str | None
    demo: str | None


def pages_of(step: Step) -> StepPages:
    calculator = CALCULATOR_PAGES.get(step.calculator or "")
    demo = DEMO_PAGES.get(step.demo or "")
    return StepPages(f"/cards/{step.card_id}", calculator[1] if calculator else None,
                     demo[1] if demo else None)  # fmt: skip


@dataclass(frozen=True)
class PartsDone:
    card: bool  # the card's page opened while signed in
    calculator: bool  # the step's calculator page opened while signed in
    demo: bool  # the step's demo run to the end while signed in
    questions: bool  # the step is done (app.journey.service.completed_cards)


def parts_done(session: Session, user_id: int, step: Step, questions_done: bool) -> PartsDone:
    pages = pages_of(step)
    wanted = [p for p in (pages.card, pages.calculator) if p]
    opened = set(session.exec(
        select(CardVisit.page).where(CardVisit.user_id == user_id, col(CardVisit.page).in_(wanted))
    ))  # fmt: skip
    demo = LIVE_DEMO_PAGES.get(step.demo or "")
    ran = (
        demo is not None
        and session.exec(
            select(DemoRun.id).where(
                DemoRun.user_id == user_id, DemoRun.demo == demo.demo, DemoRun.status == "done"
            )  # fmt: skip
        ).first()
        is not None
    )
    return PartsDone(pages.card in opened, pages.calculator in opened, ran, questions_done)
