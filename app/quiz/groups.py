"""Study groups: create one, join by invite code, see the members who share their progress.

Only members see a group: every read goes through `membership`, and a non-member gets the
same answer as for a group that does not exist.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, col, select

from app.accounts.models import User
from app.calc.messages import N_, Message
from app.cards.service import CardLibrary
from app.db import get_row
from app.quiz.bank import QuestionBank
from app.quiz.models import GroupMember, QuizAttempt, StudyGroup
from app.quiz.progress import TopicProgress, topic_progress
from app.quiz.review_queue import states_of

WEEK = timedelta(days=7)


class GroupError(ValueError):
    """Something a person asked of a group that cannot be done; the message says why."""


def _invite_code() -> str:
    # 10 characters of base32-like text: easy to read out, 50 bits, unguessable at any rate
    # a login-protected form allows.
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(secrets.choice(alphabet) for _ in range(10))


def create_group(session: Session, user: User, name: str) -> StudyGroup:
    assert user.id is not None
    group = StudyGroup(name=name, invite_code=_invite_code(), created_by=user.id)
    session.add(group)
    session.flush()
    assert group.id is not None
    session.add(GroupMember(group_id=group.id, user_id=user.id))
    session.commit()
    session.refresh(group)
    return group


def join_group(session: Session, user: User, invite_code: str) -> StudyGroup:
    code = invite_code.strip().upper().replace(" ", "").replace("-", "")
    group = session.exec(select(StudyGroup).where(StudyGroup.invite_code == code)).first()
    if group is None:
        raise GroupError(
            Message(N_("no group has that invite code: check it with whoever sent it"))
        )
    if membership(session, user, group.id) is None:
        assert group.id is not None and user.id is not None
        session.add(GroupMember(group_id=group.id, user_id=user.id))
        session.commit()
    return group


def membership(session: Session, user: User, group_id: int | None) -> GroupMember | None:
    return get_row(session, GroupMember, (group_id, user.id))


def groups_of(session: Session, user: User) -> list[StudyGroup]:
    statement = (
        select(StudyGroup)
        .join(GroupMember, col(GroupMember.group_id) == StudyGroup.id)
        .where(GroupMember.user_id == user.id)
        .order_by(StudyGroup.name)
    )
    return list(session.exec(statement))


def set_sharing(session: Session, member: GroupMember, shares: bool) -> None:
    member.shares_progress = shares
    session.add(member)
    session.commit()


def leave_group(session: Session, member: GroupMember) -> None:
    session.delete(member)
    session.commit()


@dataclass(frozen=True)
class MemberView:
    username: str
    shares: bool
    topics: list[TopicProgress]  # empty unless the member shares
    week_answers: int
    week_correct: int


@dataclass(frozen=True)
class WeeklySummary:
    since: datetime
    answers: int
    correct: int
    active_members: int
    most_practised: list[tuple[str, int]]  # card id, answers this week


def group_view(
    session: Session, group: StudyGroup, bank: QuestionBank, cards: CardLibrary,
    now: datetime | None = None, lang: str = "en",
) -> tuple[list[MemberView], WeeklySummary]:  # fmt: skip
    """Each member (progress only for those who share, topics titled in `lang`) and the week's
    summary of the sharers."""
    now = now or datetime.now(UTC)
    since = now - WEEK
    rows = session.exec(
        select(GroupMember, User)
        .join(User, col(User.id) == GroupMember.user_id)
        .where(GroupMember.group_id == group.id)
        .order_by(User.username)
    ).all()
    card_of = {item.id: item.card for item in bank.all()}
    members, per_card = [], {}
    answers = correct = active = 0
    for member, user in rows:
        if not member.shares_progress:
            members.append(MemberView(user.username, False, [], 0, 0))
            continue
        week = session.exec(
            select(QuizAttempt.item_id, QuizAttempt.correct).where(
                QuizAttempt.user_id == user.id, col(QuizAttempt.created_at) >= since
            )
        ).all()
        for item_id, _ in week:
            card = card_of.get(item_id)
            if card:
                per_card[card] = per_card.get(card, 0) + 1
        right = sum(1 for _, c in week if c)
        answers, correct, active = answers + len(week), correct + right, active + bool(week)
        topics = topic_progress(bank, cards, states_of(session, user.id), now, lang)  # type: ignore[arg-type]
        members.append(MemberView(user.username, True, topics, len(week), right))
    top = sorted(per_card.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return members, WeeklySummary(since, answers, correct, active, top)
