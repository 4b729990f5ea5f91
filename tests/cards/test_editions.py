"""Chinese editions of the cards: the loader's parity check, the ?lang= pages and search."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cards.search import SearchIndex
from app.cards.service import CardError, CardLibrary
from app.config import ROOT_DIR
from app.main import create_app
from app.quiz.bank import QuestionBank
from tests.utils import make_settings

CARDS_DIR = ROOT_DIR / "content" / "cards"
ZH_DIR = CARDS_DIR / "zh-CN"

EXAMPLE = "```example memory\nparams: 7e9\ndp_degree: 1\n```\n"
ENGLISH = (
    "---\nid: sample\ntitle: A sample card\nprerequisites: []\ncalculators: [memory]\n"
    "sources: [{cite: Paper A, at: Section 1}]\n---\n"
    "## In 30 seconds\n\nSee the [memory calculator](/calculators/memory).\n\n"
    f"## Derivation\n\n$2\\Psi$ bytes.\n\n## Worked example\n\n{EXAMPLE}\n"
    "## Common mistakes\n\nm\n\n## Follow-up questions\n\nf\n\n"
    "## Sources\n\n- [arXiv:1910.02054](https://arxiv.org/abs/1910.02054)\n"
)
CHINESE = (
    "---\nid: sample\ntitle: 示例卡片\n---\n"
    "## 30 秒回答\n\n见[显存计算器](/calculators/memory)。\n\n"
    f"## 推导\n\n$2\\Psi$ 字节。\n\n## 计算实例\n\n{EXAMPLE}\n"
    "## 常见误区\n\nm\n\n## 面试追问\n\nf\n\n"
    "## 参考文献\n\n- [arXiv:1910.02054](https://arxiv.org/abs/1910.02054)\n"
)


def write_pair(folder: Path, chinese: str = CHINESE, english: str = ENGLISH) -> None:
    (folder / "zh-CN").mkdir(exist_ok=True)
    (folder / "sample.md").write_text(english, encoding="utf-8")
    (folder / "zh-CN" / "sample.md").write_text(chinese, encoding="utf-8")


def test_an_edition_that_matches_its_english_card_loads(tmp_path: Path) -> None:
    write_pair(tmp_path)
    library = CardLibrary.load(tmp_path)
    edition = library.edition("sample", "zh")
    assert edition is not None and edition.lang == "zh"
    assert edition.sections[0] == "30 秒回答" and edition.meta.title == "示例卡片"
    assert edition.html.count('<div class="worked-example">') == 1
    assert library.get("sample").lang == "en"  # type: ignore[union-attr]
    assert edition.meta.calculators == ["memory"]  # inherited, not copied
    assert edition.meta.sources[0].cite == "Paper A"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("## 推导\n\n$2\\Psi$ 字节。\n\n", "", "do not line up"),  # a section left out
        ("## 面试追问\n\nf\n\n", "", "must end with .*'## 面试追问'"),  # a fixed one
        ("## 推导", "## 计算实例", "do not line up"),  # sections out of order
        ("## 常见误区", "## 常见错误", "must end with"),  # a fixed heading not in the table
        ("dp_degree: 1", "dp_degree: 8", "example"),  # a different calculator placeholder
        ("(/calculators/memory)", "(/calculators/training-memory)", "links differ"),
        ("(https://arxiv.org/abs/1910.02054)", "(https://example.com)", "links differ"),
        ("title: 示例卡片", "title: 示例卡片\nprerequisites: []", "takes prerequisites from"),
        ("title: 示例卡片", "title: 示例卡片\nchecked: 2026-11-25", "takes checked from"),
        ("$2\\Psi$ 字节。", "$2\\Psi$ 字节，约 42 GB。", "42 is not a figure of the English card"),
    ],
)
def test_an_edition_that_differs_in_structure_is_refused(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    assert old in CHINESE
    write_pair(tmp_path, CHINESE.replace(old, new))
    with pytest.raises(CardError, match=message):
        CardLibrary.load(tmp_path)


def test_an_edition_without_an_english_card_is_refused(tmp_path: Path) -> None:
    write_pair(tmp_path)
    (tmp_path / "zh-CN" / "lonely.md").write_text(CHINESE.replace("id: sample", "id: lonely"))
    with pytest.raises(CardError, match="no English card 'lonely'"):
        CardLibrary.load(tmp_path)


def test_every_edition_in_content_has_the_english_cards_examples() -> None:
    library = CardLibrary.load(CARDS_DIR)
    editions = library.editions("zh")
    assert len(editions) == len(list(ZH_DIR.glob("*.md"))) >= 1
    for edition in editions:
        original = library.get(edition.meta.id)
        assert original is not None and edition.examples == original.examples
        assert edition.html.count('<div class="worked-example">') == len(edition.examples)


@pytest.mark.parametrize("card_id", sorted(p.stem for p in ZH_DIR.glob("*.md")))
def test_every_chinese_edition_renders_at_lang_zh(client: TestClient, card_id: str) -> None:
    edition = client.app.state.cards.edition(card_id, "zh")
    page = client.get(f"/cards/{card_id}", params={"lang": "zh"})
    assert page.status_code == 200
    assert f'<h1 lang="zh-CN">{edition.meta.title}</h1>' in page.text
    assert '<h2 id="30-秒回答"' in page.text or ">30 秒回答<" in page.text
    assert page.text.count('<div class="worked-example">') == len(edition.examples)
    assert f'href="/cards/{card_id}?lang=en"' in page.text  # the switch back


def test_the_english_page_links_to_the_chinese_edition(client: TestClient) -> None:
    page = client.get("/cards/memory-anatomy", params={"lang": "en"}).text
    assert 'href="/cards/memory-anatomy?lang=zh"' in page and ">中文</a>" in page
    assert "In 30 seconds" in page


def test_lang_comes_from_the_query_then_the_cookie_then_accept_language(
    client: TestClient,
) -> None:
    chinese = client.app.state.cards.edition("memory-anatomy", "zh").meta.title
    browser = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}
    assert chinese in client.get("/cards/memory-anatomy", headers=browser).text
    english_first = {"Accept-Language": "en-US,en;q=0.9,zh-CN;q=0.8"}
    assert chinese not in client.get("/cards/memory-anatomy", headers=english_first).text
    # An explicit choice is remembered in the cookie, and wins over the header.
    page = client.get("/cards/memory-anatomy", params={"lang": "en"}, headers=browser)
    assert chinese not in page.text and page.cookies.get("lang") == "en"
    assert chinese not in client.get("/cards/memory-anatomy", headers=browser).text
    client.get("/cards/memory-anatomy", params={"lang": "zh"})
    assert chinese in client.get("/cards/memory-anatomy").text
    assert chinese in client.get("/cards").text  # the list shows the Chinese titles too


def test_a_card_without_a_chinese_edition_says_so_and_shows_english(tmp_path: Path) -> None:
    content = tmp_path / "content"
    shutil.copytree(ROOT_DIR / "content", content)
    (content / "cards" / "zh-CN" / "roofline.md").unlink()
    with TestClient(create_app(make_settings(tmp_path / "data", content_dir=content))) as client:
        page = client.get("/cards/roofline", params={"lang": "zh"}).text
        title = client.app.state.cards.get("roofline").meta.title
    assert 'id="edition-missing"' in page and "中文版还没有写好" in page
    assert f'<h1 lang="en">{title}</h1>' in page


# Queries a Chinese engineer types, and the card each must find first. Two characters are
# the commonest case (显存), which is why the index uses bigrams (app/cards/search.py).
CHINESE_QUERIES = {
    "流水线气泡": "pipeline-bubble",
    "交错调度": "pipeline-bubble",
    "张量并行": "tensor-parallel",
    "按列切": "tensor-parallel",
    "显存": "memory-anatomy",
    "显存碎片": "memory-anatomy",
    "混合精度": "mixed-precision",
    "损失缩放": "mixed-precision",
    "分块量化": "adam-bytes-per-parameter",
    "每参数字节": "adam-bytes-per-parameter",
    "数据并行": "dp-vs-ddp",
    "带宽最优": "ring-all-reduce",
    "切分优化器状态": "zero-stages",
    "激活重计算": "activation-checkpointing",
    "三维并行": "3d-parallelism",
    "梯度累积": "gradient-accumulation",
    "弹性训练": "elastic-training",
    "推理显存": "inference-kv-cache",
    "专家并行": "expert-parallel",
    "上下文并行": "context-parallel",
    "序列并行": "sequence-parallel",
    "零气泡": "zero-bubble-schedules",
    "算术强度": "roofline",
}


def test_chinese_queries_find_the_right_card() -> None:
    library = CardLibrary.load(CARDS_DIR)
    index = SearchIndex(library.all(), [], library.editions("zh"))
    for query, card_id in CHINESE_QUERIES.items():
        hits = index.search(query)
        assert hits and hits[0].id == card_id and hits[0].lang == "zh", (query, hits[:3])
        assert f"<mark>{query}</mark>" in hits[0].snippet


def test_a_query_mixing_english_and_chinese_finds_the_chinese_edition() -> None:
    library = CardLibrary.load(CARDS_DIR)
    index = SearchIndex(library.all(), [], library.editions("zh"))
    assert [h.id for h in index.search("1F1B 显存")][:1] == ["pipeline-bubble"]
    assert index.search("量子纠缠") == []


def test_a_chinese_query_on_the_search_page_links_to_the_chinese_edition(
    client: TestClient,
) -> None:
    page = client.get("/cards/search", params={"q": "显存碎片"}).text
    assert 'href="/cards/memory-anatomy?lang=zh"' in page
    assert "<mark>显存碎片</mark>" in page


def test_a_chinese_query_finds_quiz_items_in_chinese() -> None:
    library = CardLibrary.load(CARDS_DIR)
    bank = QuestionBank.load(ROOT_DIR / "content" / "quiz")
    index = SearchIndex(library.all(), bank.all(), library.editions("zh"), bank.translated("zh"))
    hits = [h for h in index.search("模型状态") if h.kind == "quiz"]
    assert any(h.id == "zero-model-states-per-gpu" and h.lang == "zh" for h in hits)
    first = next(h for h in hits if h.id == "zero-model-states-per-gpu")
    assert "<mark>模型状态</mark>" in first.snippet and first.card_id == "zero-stages"
