"""The bilingual glossary: every term names a real card, search finds a term by its English
or Chinese words, and /glossary lists and filters the terms."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cards.glossary import Glossary, GlossaryError
from app.config import ROOT_DIR

GLOSSARY = ROOT_DIR / "content" / "glossary.yaml"
CARD_IDS = [p.stem for p in (ROOT_DIR / "content" / "cards").glob("*.md")]
ENTRY = (
    "- en: pipeline bubble\n  zh: 流水线气泡\n  en_definition: Idle time.\n"
    "  zh_definition: 空闲时间。\n  card: {card}\n"
)


@pytest.fixture(scope="module")
def glossary() -> Glossary:
    return Glossary.load(GLOSSARY, CARD_IDS)


def test_a_term_naming_an_unknown_card_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "glossary.yaml"
    path.write_text(ENTRY.format(card="no-such-card"), encoding="utf-8")
    with pytest.raises(GlossaryError, match="names no card 'no-such-card'"):
        Glossary.load(path, CARD_IDS)
    path.write_text(ENTRY.format(card="pipeline-bubble"), encoding="utf-8")
    assert [t.zh for t in Glossary.load(path, CARD_IDS).terms] == ["流水线气泡"]


def test_an_edition_using_a_term_the_glossary_avoids_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "glossary.yaml"
    path.write_text(
        "- en: activation recomputation\n  zh: 激活重计算\n  en_definition: Recompute.\n"
        "  zh_definition: 重新计算激活。\n  card: activation-checkpointing\n"
        "  zh_avoid: [重物化, 重算]\n",
        encoding="utf-8",
    )
    good = ("cards/zh-CN/a.md", "激活重计算（activation recomputation）让 `重算` 留在代码里也行。")
    assert Glossary.load(path, CARD_IDS, [good]).terms
    with pytest.raises(GlossaryError, match="a.md: uses '重物化'.*'激活重计算'"):
        Glossary.load(path, CARD_IDS, [("cards/zh-CN/a.md", "用重物化换显存。")])
    with pytest.raises(GlossaryError, match="多 N 倍 reads as N \\+ 1 times"):
        Glossary.load(path, CARD_IDS, [("quiz/zh-CN/b.yaml", "收发操作多 $v$ 倍。")])
    assert Glossary.load(path, CARD_IDS, [("c.md", "收发操作变为 $v$ 倍，是 DDP 的 1.5 倍。")])


def test_every_chinese_card_and_question_keeps_to_the_glossary(glossary: Glossary) -> None:
    """The app loads the glossary with every zh card and question (app/main.py); this says
    which text breaks it without starting the app."""
    from app.cards.glossary import edition_wording_problems

    root = ROOT_DIR / "content"
    texts = sorted((root / "cards" / "zh-CN").glob("*.md")) + sorted(
        (root / "quiz" / "zh-CN").glob("*.yaml")
    )
    texts += [root / "quiz" / "labels" / "zh-CN.yaml"] + sorted(
        (root / "design" / "zh-CN").glob("*.yaml")
    )
    problems = [f"{p.name}: {problem}" for p in texts
                for problem in edition_wording_problems(glossary.terms,
                                                        p.read_text(encoding="utf-8"))]  # fmt: skip
    assert not problems, problems
    assert any(t.zh_avoid for t in glossary.terms)


def test_the_glossary_has_the_key_terms_each_with_a_card(glossary: Glossary) -> None:
    assert len(glossary.terms) >= 60
    english = {t.en for t in glossary.terms}
    assert {"pipeline bubble", "all-reduce", "optimizer states", "MFU", "NVLink"} <= english


@pytest.mark.parametrize("query", ["气泡", "流水线气泡", "bubble", "Pipeline bubbles"])
def test_search_finds_the_pipeline_bubble_in_either_language(
    glossary: Glossary, query: str
) -> None:
    hits = glossary.search(query)
    assert hits[0].en == "pipeline bubble" and hits[0].card == "pipeline-bubble"


def test_a_query_that_matches_nothing_finds_nothing(glossary: Glossary) -> None:
    assert glossary.search("zebra") == []
    assert glossary.search("斑马") == []


def test_the_page_lists_every_term_and_filters_by_a_chinese_query(client: TestClient) -> None:
    page = client.get("/glossary")
    assert page.status_code == 200
    assert page.text.count('class="tile term"') == len(Glossary.load(GLOSSARY, CARD_IDS).terms)
    found = client.get("/glossary", params={"q": "优化器"}).text
    assert "optimizer states" in found and "优化器状态" in found
    assert 'href="/cards/pipeline-bubble' not in found
