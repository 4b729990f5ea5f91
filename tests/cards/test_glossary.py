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
