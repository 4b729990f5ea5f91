"""Chinese editions of quiz items: the loader's checks, the fallback to English, and the
question shown in the request's language while grading keeps the English answer keys."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import ROOT_DIR
from app.quiz.bank import QuestionBank
from app.quiz.items import BankError, SingleChoiceItem
from tests.quiz.conftest import shown_item
from tests.utils import register

QUIZ_DIR = ROOT_DIR / "content" / "quiz"
ENGLISH = """
- id: s-one
  card: memory-anatomy
  kind: single
  prompt: "Which one?"
  options:
    - {text: "A", correct: false, explanation: "Not A."}
    - {text: "B", correct: true, explanation: "B it is."}
- id: s-flash
  card: memory-anatomy
  kind: flashcard
  prompt: "Recall it."
  back: "The answer."
- id: s-gen
  card: zero-stages
  kind: generated
  generator: memory.model_states_per_gpu
  prompt: "{params} on {dp_degree} GPUs, $t_{{x}}$?"
  unit: GB
  relative_tolerance: 0.02
  choices: {params: [7.5e9], dp_degree: [64], zero_stage: [2]}
"""
CHINESE = """
- id: s-one
  kind: single
  prompt: "哪一个？"
  options:
    - {text: "甲", explanation: "不是甲。"}
    - {text: "乙", explanation: "就是乙。"}
"""


def load(tmp_path: Path, chinese: str) -> QuestionBank:
    (tmp_path / "zh-CN").mkdir(exist_ok=True)
    (tmp_path / "sample.yaml").write_text(ENGLISH, encoding="utf-8")
    (tmp_path / "zh-CN" / "sample.yaml").write_text(chinese, encoding="utf-8")
    return QuestionBank.load(tmp_path)


def test_an_edition_replaces_the_words_and_keeps_the_answer_keys(tmp_path: Path) -> None:
    bank = load(tmp_path, CHINESE)
    english = bank.get("s-one")
    chinese = bank.in_language(english, "zh")
    assert isinstance(chinese, SingleChoiceItem) and isinstance(english, SingleChoiceItem)
    assert chinese.prompt == "哪一个？"
    assert [o.text for o in chinese.options] == ["甲", "乙"]
    assert [o.correct for o in chinese.options] == [o.correct for o in english.options]
    assert bank.get("s-one") is english  # grading and storage look items up in English


def test_an_item_without_an_edition_falls_back_to_english(tmp_path: Path) -> None:
    bank = load(tmp_path, CHINESE)
    flash = bank.get("s-flash")
    assert bank.in_language(flash, "zh") is flash
    assert [i.id for i in bank.translated("zh")] == ["s-one"]


@pytest.mark.parametrize(
    ("chinese", "message"),
    [
        ("- {id: s-nope, kind: flashcard, prompt: 问, back: 答}", "has no item 's-nope'"),
        ("- {id: s-flash, kind: numeric, prompt: 问, solution: 解}", "is 'flashcard' in English"),
        ("- {id: s-flash, kind: flashcard, prompt: 问}", "back"),
        (CHINESE + '    - {text: "丙", explanation: "多出来的。"}\n', "2 options in English, 3"),
        (
            CHINESE.replace('explanation: "不是甲。"', 'explanation: "不是甲。", correct: true'),
            "Extra inputs are not permitted",
        ),
        ("- {id: s-gen, kind: generated, prompt: '{params} 在 GPU 上'}", "has fields ['params']"),
        ("- {id: s-gen, kind: generated, prompt: '{params}', unit: GB}", "Extra inputs"),
    ],
    ids=[
        "unknown-id",
        "kind-changed",
        "field-missing",
        "option-count",
        "answer-repeated",
        "placeholders",
        "unit-repeated",
    ],
)
def test_the_loader_refuses_an_edition_that_does_not_fit(
    tmp_path: Path, chinese: str, message: str
) -> None:
    with pytest.raises(BankError, match="zh-CN/sample.yaml") as caught:
        load(tmp_path, chinese)
    assert message in str(caught.value)


def test_an_edition_with_no_english_file_is_refused(tmp_path: Path) -> None:
    load(tmp_path, CHINESE)
    (tmp_path / "zh-CN" / "other.yaml").write_text(CHINESE, encoding="utf-8")
    with pytest.raises(BankError, match="no English quiz file other.yaml"):
        QuestionBank.load(tmp_path)


def test_every_item_in_the_bank_has_its_chinese_edition() -> None:
    bank = QuestionBank.load(QUIZ_DIR)
    translated = {i.id for i in bank.translated("zh")}
    assert [i.id for i in bank.all() if i.id not in translated] == []


def test_the_question_is_shown_in_chinese_and_graded_by_the_english_keys(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    page = quiz_client.get("/quiz", headers={"Accept-Language": "zh-CN,zh;q=0.9"}).text
    assert shown_item(page) == "fx-single"
    assert "ZeRO 第 1 阶段切分训练显存中的哪一项？" in page and "优化器状态" in page
    data = {"item_id": "fx-single", "shown_at": str(int(time.time() * 1000)), "option": "0"}
    result = quiz_client.post("/quiz/answer?lang=zh", data=data, headers={"HX-Request": "true"})
    assert result.status_code == 200
    assert 'class="panel result right"' in result.text  # the English key: option 0 is right
    assert "第 1 阶段切分优化器状态。" in result.text


def test_english_is_shown_without_a_chinese_choice(quiz_client: TestClient) -> None:
    register(quiz_client)
    page = quiz_client.get("/quiz").text
    assert "Which term of training memory does ZeRO stage 1 partition?" in page
    assert "优化器状态" not in page
