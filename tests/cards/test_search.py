"""Search on the real cards and quiz bank: cards before quiz items, snippets and titles in
plain text, and the reader's language for the items that have an edition in it."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.cards.plain_text import latex_text, markdown_text
from app.cards.search import HAN, SearchIndex, first_words
from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.quiz.bank import QuestionBank

CONTENT = ROOT_DIR / "content"
ZERO_CARDS = {"zero-stages", "zero-r", "zero-offload-infinity", "zero-and-activations"}
# Markup a reader must never see in a title or snippet: math delimiters and commands,
# Markdown bold and fences, a generated prompt's {placeholders}.
MARKUP = re.compile(r"\$|\\[A-Za-z]+|\*\*|```|\{[A-Za-z_]\w*\}")
# The queries of the browser walk-through, and words that sit in formulas, diagrams and
# generated prompts.
QUERIES = [
    "zero", "offload", "all-reduce", "pipeline", "FSDP2", "ZeRO-2 optimizer states",
    "ranks ring payload", "model params", "Rank holds", "bubble fraction", "Psi", "update",
    "activations checkpoint", "KV cache", "显存", "流水线气泡", "梯度",
]  # fmt: skip


@pytest.fixture(scope="module")
def bank() -> QuestionBank:
    return QuestionBank.load(CONTENT / "quiz")


@pytest.fixture(scope="module")
def index(bank: QuestionBank) -> SearchIndex:
    library = CardLibrary.load(CONTENT / "cards")
    return SearchIndex(library.all(), bank.all(), library.editions("zh"), bank.translated("zh"))


def test_zero_lists_the_zero_cards_first(index: SearchIndex) -> None:
    hits = index.search("zero")
    kinds = [h.kind for h in hits]
    assert {h.id for h in hits[:4]} == ZERO_CARDS and "quiz" in kinds
    assert kinds == sorted(kinds)  # "card" < "quiz": every card before every quiz item


@pytest.mark.parametrize(
    ("query", "card_id"),
    [("offload", "zero-offload-infinity"), ("all-reduce", "ring-all-reduce"),
     ("pipeline", "pipeline-bubble")],
)  # fmt: skip
def test_the_matching_card_comes_before_the_quiz_items(index: SearchIndex, query: str,
                                                       card_id: str) -> None:  # fmt: skip
    hits = index.search(query)
    assert hits[0].id == card_id and hits[0].kind == "card"
    assert any(h.kind == "quiz" for h in hits)


def test_each_kind_keeps_its_own_limit(index: SearchIndex) -> None:
    """A word in every card still leaves room for the quiz items, and the other way round."""
    hits = index.search("GPU", limit=5)
    assert [h.kind for h in hits] == ["card"] * 5 + ["quiz"] * 5


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_title_or_snippet_shows_markup(index: SearchIndex, lang: str) -> None:
    for query in QUERIES:
        for hit in index.search(query, lang=lang):
            assert not MARKUP.search(hit.title + hit.snippet), (query, lang, hit)


def test_words_of_latex_commands_are_not_indexed(index: SearchIndex) -> None:
    assert index.search("frac") == [] and index.search("mathrm") == []


def test_a_snippet_writes_math_out_as_text(index: SearchIndex) -> None:
    """The ZeRO stages card's aligned formula: $P_{os}: 2\\Psi + 2\\Psi + \\frac{K\\Psi}{N_d}$."""
    hit = next(h for h in index.search("P_os") if h.id == "zero-stages")
    formula = "(2+2+K) Ψ; <mark>P_os</mark>: 2Ψ + 2Ψ + KΨ/N_d; <mark>P_(os</mark>+g): 2Ψ"
    assert formula in hit.snippet


def test_latex_reads_as_plain_text() -> None:
    assert latex_text(r"3m\frac{N_d-1}{N_d}\Psi") == "3m(N_d-1)/N_d Ψ"
    assert latex_text(r"P_{os+g} \\ P_{os}") == "P_(os+g); P_os"
    assert latex_text(r"2\Psi + \frac{(2+K)\,\Psi}{N_d}") == "2Ψ + ((2+K) Ψ)/N_d"
    assert latex_text(r"10^{9}\ \text{bytes} \approx 2^{30}") == "10⁹ bytes ≈ 2³⁰"
    assert latex_text(r"\sqrt{\frac{2C}{\lambda}}") == "√(2C/λ)"
    assert latex_text(r"X^\top W") == "Xᵀ W"


def test_markdown_keeps_its_words_only() -> None:
    text = markdown_text(
        "- **FSDP2** (`torch.distributed.fsdp.fully_shard`) does the *update* in $O(\\Psi)$.\n\n"
        '```mermaid\nflowchart TD\n    A["Rank holds 1/N_d"] -->|"next layer"| B[Forward]\n```\n\n'
        "```example memory\nparams: 7e9\n```\n\n"
        '!!! warning "A common claim"\n    It is wrong.\n'
    )
    assert text.split("\n") == [
        "FSDP2 (torch.distributed.fsdp.fully_shard) does the update in O(Ψ).",
        "Rank holds 1/N_d; next layer; Forward",
        "A common claim",
        "It is wrong.",
    ]


def test_a_quiz_item_is_titled_by_its_prompt_with_the_fields_filled(index: SearchIndex) -> None:
    hits = {h.id: h for h in index.search("ring all-reduce") if h.kind == "quiz"}
    generated = hits["ring-all-reduce-bytes-per-rank"].title  # "{ranks} ranks run a ring ..."
    assert re.match(r"\d+ ranks run a ring all-reduce where S = [\d.]+ [GM]B", generated)
    assert hits["ring-all-reduce-busbw"].title.startswith("nccl-tests prints algbw and busbw")


def test_a_long_first_line_is_cut_at_a_word() -> None:
    title = first_words("word " * 40 + "\nsecond line")
    assert title.endswith("word…") and len(title) <= 91
    assert first_words("短" * 60).endswith("…") and len(first_words("短" * 60)) == 46
    assert first_words("Short prompt?\nMore.") == "Short prompt?"


def test_an_english_query_shows_the_chinese_editions_to_a_chinese_reader(
    index: SearchIndex, bank: QuestionBank
) -> None:
    hits = index.search("all-reduce", lang="zh")
    quiz = next(h for h in hits if h.id == "ring-all-reduce-busbw")
    item = bank.get("ring-all-reduce-busbw")
    assert item is not None
    chinese = bank.in_language(item, "zh").prompt
    assert quiz.lang == "zh" and quiz.title == chinese.replace("`", "")  # `algbw` is code
    assert "<mark>all</mark>-<mark>reduce</mark>" in quiz.snippet
    card = next(h for h in hits if h.kind == "card")
    assert card.lang == "zh" and HAN.search(card.title) and HAN.search(quiz.card_title)
    # The same query in English shows the English prompt.
    english = next(h for h in index.search("all-reduce", lang="en") if h.id == quiz.id)
    assert english.lang == "en" and english.title == item.prompt.replace("`", "")


def test_the_search_page_in_chinese_shows_chinese_questions(client: TestClient) -> None:
    page = client.get("/cards/search", params={"q": "all-reduce", "lang": "zh"}).text
    assert "下列哪些说法正确" in page and "Which statements are right?" not in page
    assert 'href="/cards/ring-all-reduce?lang=zh"' in page


def test_the_search_page_lists_cards_then_quiz_items(client: TestClient) -> None:
    page = client.get("/cards/search", params={"q": "zero"}).text
    links = re.findall(r'<a href="(/cards/[^"?]+|/quiz[^"]*)"><h2>', page)
    assert {link.removeprefix("/cards/") for link in links[:4]} == ZERO_CARDS
    assert links[-1].startswith("/quiz?mode=practice&amp;topic=")
    hits = page[page.index('id="hits"') : page.index("</ul>", page.index('id="hits"'))]
    assert not MARKUP.search(hits)
