"""Free responses (issue #27): the automatic checks, the rubric score and its FSRS rating,
follow-ups computed by the calculators, the compare-then-record flow on the real bank, the
mock interview's chains and levels, and the progress file."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fsrs import Rating
from sqlmodel import Session, select

from app.accounts.models import User
from app.main import create_app
from app.quiz.bank import QuestionBank
from app.quiz.free_grading import (
    PASS_SCORE,
    auto_checks,
    expected_value,
    rating_for_score,
    rubric_score,
)
from app.quiz.items import BankError, FreeResponseItem
from app.quiz.mock import start_mock
from app.quiz.models import ItemState, MockInterview, QuizAttempt
from tests.utils import make_settings, register

OPENER = "zero-stages-walk-through-memory"
ZERO1 = "zero-stages-walk-through-memory-zero1"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = make_settings(tmp_path_factory.mktemp("free") / "data")
    with TestClient(create_app(settings)) as c:
        register(c)
        yield c


def item(client: TestClient, item_id: str) -> FreeResponseItem:
    found = client.app.state.quiz.get(item_id)
    assert isinstance(found, FreeResponseItem)
    return found


def test_a_figure_counts_in_any_unit_of_its_kind_and_only_near_the_calculators(
    client: TestClient,
) -> None:
    opener = item(client, OPENER)
    said = {"17.5 GB per GPU": True, "about 17,500 MB": True, "16.3 GiB": True,
            "roughly 35 GB": False, "17.5 s": False, "no figure at all": False}  # fmt: skip
    for text, passes in said.items():
        (figure,) = auto_checks(opener, text).figures
        assert figure.passed is passes, text
    terms = auto_checks(opener, "We shard the Optimizer States").terms
    assert all(t.passed for t in terms)
    assert not any(t.passed for t in auto_checks(opener, "nothing relevant").terms)


def test_the_score_weighs_ticked_points_and_passed_checks_into_a_rating(
    client: TestClient,
) -> None:
    opener = item(client, OPENER)
    everything = auto_checks(opener, opener.model_answer)
    nothing = auto_checks(opener, "I am not sure.")
    every_point = set(range(len(opener.rubric)))
    assert rubric_score(opener, every_point, everything) == 1
    assert rubric_score(opener, set(), nothing) == 0
    # Weights 2, 2, 1, 2 and three automatic checks: the first point and the checks make 5/10.
    assert rubric_score(opener, {0}, everything) == pytest.approx(5 / 10)
    assert rating_for_score(1.0, 60, opener.minutes) == Rating.Easy
    assert rating_for_score(0.8, 60, opener.minutes) == Rating.Good
    assert rating_for_score(PASS_SCORE, 60, opener.minutes) == Rating.Hard
    assert rating_for_score(PASS_SCORE - 0.01, 60, opener.minutes) == Rating.Again
    assert rating_for_score(1.0, opener.minutes * 60 * 2, opener.minutes) == Rating.Hard


def test_a_follow_up_changing_a_condition_is_computed_again_by_the_calculator(
    client: TestClient,
) -> None:
    bank = client.app.state.quiz
    opener, zero1 = item(client, OPENER), item(client, ZERO1)
    assert zero1.follows == OPENER and zero1 in bank.follow_ups(opener)
    (check,) = zero1.numbers
    assert check.inputs["zero_stage"] == 1
    by_hand = (4 * 70e9 + 12 * 70e9 / 64) / 1e9  # ZeRO-1: 4Ψ whole, 12Ψ over N_d = 64
    assert expected_value(check) == pytest.approx(by_hand) == pytest.approx(293.125)
    assert expected_value(opener.numbers[0]) == pytest.approx(17.5)
    # The follow-up that asks about traffic changes nothing, and so asks for no memory figure.
    traffic = item(client, "zero-stages-walk-through-memory-traffic")
    assert traffic.numbers == []


def post(client: TestClient, url: str, **fields: object) -> object:
    data = {"shown_at": str(int(time.time() * 1000)), **fields}
    return client.post(url, data=data, headers={"HX-Request": "true"})


def test_an_answer_is_compared_then_recorded_with_its_rubric_into_fsrs(
    client: TestClient,
) -> None:
    opener = item(client, OPENER)
    said = ("16 bytes per parameter: 2 + 2 + 12 of optimizer states; ZeRO-3 shards all of it "
            "over 64 ranks, so 17.5 GB each.")  # fmt: skip
    shown = post(client, "/quiz/compare", item_id=OPENER, response=said)
    assert shown.status_code == 200
    assert 'id="free-comparison"' in shown.text and 'id="rubric"' in shown.text
    assert "#derivation" in shown.text  # a rubric point links the card's section
    assert shown.text.count('data-passed="true"') == 3  # the figure and both terms
    # Recording without the comparison is refused: the rubric was never shown.
    refused = post(client, "/quiz/answer", item_id=OPENER, response=said)
    assert refused.status_code == 422 and "compare your answer" in refused.text
    recorded = post(client, "/quiz/answer", item_id=OPENER, response=said, compared="1",
                    option=["0", "1", "2"])  # fmt: skip
    assert recorded.status_code == 200 and "Recorded." in recorded.text
    with Session(client.app.state.engine) as session:
        attempt = session.exec(select(QuizAttempt).where(QuizAttempt.item_id == OPENER)).one()
        state = session.exec(select(ItemState).where(ItemState.item_id == OPENER)).one()
    assert attempt.response == said and attempt.rubric_ticked == [0, 1, 2]
    total = sum(p.weight for p in opener.rubric) + 3
    assert attempt.score == pytest.approx((2 + 2 + 1 + 3) / total)
    assert attempt.correct and attempt.rating == int(Rating.Good) and state.reviews == 1


def test_the_comparison_is_in_chinese_with_the_chinese_cards_sections(client: TestClient) -> None:
    shown = client.post("/quiz/compare?lang=zh", headers={"HX-Request": "true"},
                        data={"item_id": OPENER, "response": "17.5 GB"})  # fmt: skip
    assert shown.status_code == 200
    assert "模型答案" in shown.text or "参考答案" in shown.text
    assert "#推导" in shown.text or "%E6%8E%A8%E5%AF%BC" in shown.text
    client.get("/quiz?lang=en")  # the choice sticks to the account: back to English


def test_an_empty_answer_or_an_unknown_item_is_refused_with_a_reason(client: TestClient) -> None:
    empty = post(client, "/quiz/compare", item_id=OPENER, response="   ")
    assert empty.status_code == 422 and "write or dictate" in empty.text
    assert post(client, "/quiz/compare", item_id="no-such-item", response="x").status_code == 422
    bad_tick = post(client, "/quiz/answer", item_id=OPENER, response="x", compared="1",
                    option="7")  # fmt: skip
    assert bad_tick.status_code == 422


def test_a_spoken_mock_asks_each_opener_then_its_follow_ups(client: TestClient) -> None:
    bank, cards = client.app.state.quiz, ["zero-stages"]
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User)).first()
        assert user is not None
        mock = start_mock(session, user, bank, cards, 5, 20, random.Random(7), "mid", "spoken")
        asked = [q["item_id"] for q in mock.questions]
    assert len(asked) == 5 and all(bank.get(i).kind == "free" for i in asked)
    opener_at = asked.index(OPENER)
    assert asked[opener_at + 1 : opener_at + 3] == [
        ZERO1,
        "zero-stages-walk-through-memory-traffic",
    ]


def test_a_level_mixes_the_mock_and_never_reaches_two_levels_away(client: TestClient) -> None:
    bank = client.app.state.quiz
    cards = [c.meta.id for c in client.app.state.cards.all()]
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User)).first()
        assert user is not None
        asked: list[str] = []
        for seed in range(4):
            mock = start_mock(session, user, bank, cards, 20, 30, random.Random(seed), "junior")
            asked += [bank.level_of(bank.get(q["item_id"])) for q in mock.questions
                      if not getattr(bank.get(q["item_id"]), "follows", None)]  # fmt: skip
        assert session.exec(select(MockInterview)).all()
    in_bank = [bank.level_of(i) for i in bank.all() if not getattr(i, "follows", None)]
    assert "senior" not in asked
    # Junior questions are drawn more often than the bank holds them.
    assert asked.count("junior") / len(asked) > in_bank.count("junior") / len(in_bank)


def test_a_free_response_goes_out_and_comes_back_with_the_progress_file(
    client: TestClient, tmp_path: Path
) -> None:
    exported = client.get("/progress/export")
    assert exported.status_code == 200
    data = json.loads(exported.content)
    free = [a for a in data["attempts"] if a["kind"] == "free"]
    assert free and free[0]["response"] and free[0]["rubric_ticked"] == [0, 1, 2]
    other = TestClient(create_app(make_settings(tmp_path / "other")))
    with other:
        register(other)
        imported = other.post("/progress/import", files={"file": ("p.json", exported.content)})
        assert imported.status_code in (200, 303), imported.text[:500]
        with Session(other.app.state.engine) as session:
            attempt = session.exec(select(QuizAttempt).where(QuizAttempt.kind == "free")).first()
        assert attempt is not None and attempt.rubric_ticked == [0, 1, 2]
        assert attempt.response == free[0]["response"]


FREE_ITEM = """
- id: x-free
  card: zero-stages
  kind: free
  level: senior
  prompt: Why?
  model_answer: Because 17.5 GB.
  rubric:
    - {point: one, weight: 2, section: derivation}
    - {point: two, section: in-30-seconds}
  numbers:
    - {generator: memory.model_states_per_gpu, inputs: {params: 70e9, dp_degree: 64, zero_stage: 3},
       unit: GB, label: states}
  follow_ups:
    - id: x-free-next
      prompt: And with ZeRO-1?
      model_answer: 293 GB.
      change: {zero_stage: 1}
      rubric: [{point: a, section: derivation}, {point: b, section: derivation}]
"""


def bank_of(tmp_path: Path, english: str, chinese: str | None = None,
            labels: str = "states: 模型状态") -> QuestionBank:  # fmt: skip
    (tmp_path / "zh-CN").mkdir(parents=True, exist_ok=True)
    (tmp_path / "labels").mkdir(exist_ok=True)
    (tmp_path / "labels" / "zh-CN.yaml").write_text(labels, encoding="utf-8")
    (tmp_path / "x.yaml").write_text(english, encoding="utf-8")
    if chinese is not None:
        (tmp_path / "zh-CN" / "x.yaml").write_text(chinese, encoding="utf-8")
    return QuestionBank.load(tmp_path)


def test_the_format_flattens_follow_ups_and_refuses_what_does_not_fit(tmp_path: Path) -> None:
    bank = bank_of(tmp_path, FREE_ITEM)
    follow = bank.get("x-free-next")
    assert follow.follows == "x-free" and follow.level == "senior"
    assert expected_value(follow.numbers[0]) == pytest.approx(293.125)
    bad = {
        "change: {zero_stage: 1}": "change: {tp: 8}",  # not an input of the opener's checks
        "weight: 2": "weight: 5",  # weights are 1 to 3
        "level: senior": "level: principal",
    }
    for old, new in bad.items():
        with pytest.raises(BankError):
            bank_of(tmp_path, FREE_ITEM.replace(old, new))
    # The app refuses a rubric section the card does not have.
    wrong_section = bank_of(tmp_path, FREE_ITEM.replace("section: in-30-seconds",
                                                        "section: nowhere"))  # fmt: skip
    assert wrong_section.section_problems({"zero-stages": ["in-30-seconds", "derivation"]})


def test_a_chinese_edition_gives_every_rubric_point_in_order(tmp_path: Path) -> None:
    chinese = """
- id: x-free
  kind: free
  prompt: 为什么？
  model_answer: 因为 17.5 GB。
  rubric: [一, 二]
  key_terms: []
"""
    bank = bank_of(tmp_path, FREE_ITEM, chinese)
    zh = bank.in_language(bank.get("x-free"), "zh")
    assert [p.point for p in zh.rubric] == ["一", "二"]
    assert [p.section for p in zh.rubric] == ["derivation", "in-30-seconds"]
    assert [n.inputs for n in zh.numbers] == [n.inputs for n in bank.get("x-free").numbers]
    assert [n.label for n in zh.numbers] == ["模型状态"]
    with pytest.raises(BankError, match="number label"):
        bank_of(tmp_path, FREE_ITEM, chinese, labels="other: 别的")
    with pytest.raises(BankError, match="rubric points"):
        bank_of(tmp_path, FREE_ITEM, chinese.replace("[一, 二]", "[一, 二, 三]"))
