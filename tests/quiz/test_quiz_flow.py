"""A learner's second pass (issue #29) over HTTP on the fixture bank: the topic filter lists
the cards by title before the tags, a question names its card by title, a flashcard's rating
buttons say what each schedules (FSRS's own preview), times are UTC instants in <time>, and a
wrong answer is asked again before the review ends. The browser's side is
tests/e2e/test_quiz_flow.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from fsrs import Rating
from sqlmodel import Session, select

from app.accounts.models import User
from app.i18n import language
from app.quiz.models import ItemState
from app.quiz.service import Outcome, next_intervals, question_for, record_answer
from app.templating import templates
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT, STUDY_ORDER, answer
from tests.utils import register

CARDS_WITH_ITEMS = ["memory-anatomy", "mixed-precision", "zero-stages"]  # in study order


def topic_groups(page: str) -> list[tuple[str, list[str]]]:
    """The topic <select>'s option groups: (label, option texts)."""
    select = re.search(r'<select name="topic">(.*?)</select>', page, re.S)
    assert select, page[:3000]
    groups = re.findall(r'<optgroup label="([^"]+)">(.*?)</optgroup>', select.group(1), re.S)
    return [(label, re.findall(r"<option [^>]*>([^<]*)</option>", body)) for label, body in groups]


@pytest.mark.parametrize(
    ("lang", "groups"), [("en", ("Cards", "Tags")), ("zh", ("卡片", "标签（tag）"))]
)
def test_the_topic_filter_lists_card_titles_then_their_tags(
    quiz_client: TestClient, lang: str, groups: tuple[str, str]
) -> None:
    register(quiz_client)
    page = quiz_client.get(f"/quiz?lang={lang}").text
    library = quiz_client.app.state.cards
    titles = [(library.edition(c, lang) or library.get(c)).meta.title for c in CARDS_WITH_ITEMS]
    tags = sorted({t for c in CARDS_WITH_ITEMS for t in library.get(c).meta.tags})
    assert topic_groups(page) == [(groups[0], titles), (groups[1], [f"#{t}" for t in tags])]
    assert len(library.tags()) > len(tags)  # a tag of no card with questions is left out
    if lang == "zh":
        assert titles[0] == "训练显存构成：GPU 上的每一 GB 都花在哪里"
    # The mock interview's filter is the same.
    assert topic_groups(quiz_client.get(f"/mock?lang={lang}").text)[0] == (groups[0], titles)


@pytest.mark.parametrize(
    ("lang", "title"),
    [("en", "Memory anatomy of training: where every gigabyte on the GPU goes"),
     ("zh", "训练显存构成：GPU 上的每一 GB 都花在哪里")],
    ids=["en", "zh"],
)  # fmt: skip
def test_a_question_names_its_card_by_title(quiz_client: TestClient, lang: str, title: str) -> None:
    register(quiz_client)
    page = quiz_client.get(f"/quiz?lang={lang}").text
    assert shown_item(page) == "fx-single"
    assert f'<a class="question-card" href="/cards/memory-anatomy">{title}</a>' in page


def test_a_flashcards_rating_buttons_say_what_each_schedules(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.get("/quiz?topic=zero-stages&skip=fx-generated").text
    assert shown_item(page) == "fx-flash"
    buttons = re.findall(r'name="rating" value="(\d)".*?</kbd> <span>(\w+)</span> '
                         r'<span class="interval"><span aria-hidden="true">· </span>([^<]+)</span>',
                         page)  # fmt: skip
    # A new card: FSRS's learning steps are 1 and 10 minutes (Hard: halfway, 5.5 minutes);
    # Easy graduates it at once, at FSRS-6's initial stability for Easy (w3 = 8.3 days).
    assert buttons == [("1", "Again", "1 min"), ("2", "Hard", "6 min"),
                       ("3", "Good", "10 min"), ("4", "Easy", "8 d")]  # fmt: skip
    chinese = quiz_client.get("/quiz?topic=zero-stages&skip=fx-generated&lang=zh").text
    assert '<span aria-hidden="true">· </span>8 天</span>' in chinese


def test_the_interval_preview_is_what_saving_that_rating_gives(quiz_client: TestClient) -> None:
    """For a new item and for one in review (rated Easy 3 days ago), each rating's preview is
    the interval record_answer then schedules; the preview itself saves nothing."""
    question = question_for(quiz_client.app.state.quiz.get("fx-flash"))
    now = datetime.now(UTC)
    previews = {}
    with Session(quiz_client.app.state.engine) as session:
        for history in ("new", "in review"):
            for rating in Rating:  # one learner each, so each rating meets the same state
                user = User(username=f"{history}-{rating.name}", password_hash="-")
                session.add(user)
                session.commit()
                assert user.id is not None
                if history == "in review":
                    three_days_ago = now - timedelta(days=3)
                    record_answer(session, user, question, Outcome(True, Rating.Easy),
                                  now=three_days_ago)  # fmt: skip
                state = session.exec(select(ItemState).where(ItemState.user_id == user.id)).first()
                preview = next_intervals(state, user.id, "fx-flash", now)[int(rating)]
                outcome = Outcome(rating != Rating.Again, rating)
                _attempt, saved = record_answer(session, user, question, outcome, now=now)
                assert saved.reviews == (1 if history == "new" else 2)
                assert preview == (saved.due - now).total_seconds() > 0
                previews[history, rating] = preview
    # In review, Again is a relearning step of 10 minutes and Good is days away.
    assert previews["in review", Rating.Again] == 600
    assert previews["in review", Rating.Good] > previews["new", Rating.Good] == 600


@pytest.mark.parametrize(
    ("seconds", "english", "chinese"),
    [(30, "1 min", "1 分钟"), (330, "6 min", "6 分钟"), (5 * 3600, "5 h", "5 小时"),
     (3 * 86400, "3 d", "3 天"), (39 * 86400, "1.3 mo", "1.3 个月"),
     (60 * 86400, "2 mo", "2 个月"), (400 * 86400, "1.1 y", "1.1 年")],
)  # fmt: skip
def test_an_interval_reads_as_anki_shows_it(seconds: int, english: str, chinese: str) -> None:
    interval = templates.env.get_template("quiz/_macros.html").module.interval
    assert str(interval(seconds)) == english
    with language("zh"):
        assert str(interval(seconds)) == chinese


def test_times_are_utc_instants_in_time_elements(quiz_client: TestClient) -> None:
    register(quiz_client)
    fragment = answer(quiz_client, "fx-single", **RIGHT["fx-single"]).text
    with Session(quiz_client.app.state.engine) as session:
        due = session.exec(select(ItemState)).one().due
    iso = due.isoformat()
    assert iso.endswith("+00:00")  # an instant: the browser says it in its own time zone
    assert (f'Next review: <time datetime="{iso}" data-local="datetime" class="next-due">'
            f'{due:%Y-%m-%d %H:%M} UTC</time>.') in fragment  # fmt: skip
    progress = quiz_client.get("/progress").text
    assert f'<time datetime="{iso}" data-local="date">{due:%Y-%m-%d}</time>' in progress
    assert f'next due, at <time datetime="{iso}" data-local="time">{due:%H:%M} UTC</time>' in (
        progress
    )


def test_a_wrong_answer_is_asked_again_before_the_review_ends(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", option="1")  # wrong: Again, due in a minute
    for item_id in STUDY_ORDER[1:]:
        assert shown_item(quiz_client.get("/quiz").text) == item_id  # new items first
        answer(quiz_client, item_id, **RIGHT[item_id])
    # Not due for a minute yet, but the review would end without it: it comes now.
    page = quiz_client.get("/quiz?skip=fx-flash").text
    assert shown_item(page) == "fx-single" and "Again: answered wrong earlier" in page
    assert 'data-done="5" data-total="6"' in page
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    assert 'id="all-done"' in quiz_client.get("/quiz?skip=fx-single").text
