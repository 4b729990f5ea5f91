"""The UI in Chinese: the catalogue, every template's text wrapped for translation, and the
language a page is shown in (?lang=, the user's setting, the cookie, Accept-Language)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient

from app.config import ROOT_DIR
from app.i18n import TRANSLATIONS_DIR, translations
from app.templating import templates
from tests.utils import csrf_token, register

PO_PATH = TRANSLATIONS_DIR / "zh_CN" / "LC_MESSAGES" / "messages.po"
TEMPLATES = ROOT_DIR / "templates"

# Templates whose text is not wrapped yet. The list only shrinks: each one listed must still
# hold an untranslated string (test below), and every other template must hold none.
UNTRANSLATED_TEMPLATES = {
    "calculators/_communication_result.html",
    "calculators/_pipeline_result.html",
    "calculators/_planner_result.html",
    "cards/_planner_example.html",
    "demos/_activation_checkpointing_rows.html",
    "demos/_activation_checkpointing_run.html",
    "demos/_activation_checkpointing_summary.html",
    "demos/_all_reduce_prediction.html",
    "demos/_all_reduce_summary.html",
    "demos/_all_reduce_table.html",
    "demos/_collectives_rows.html",
    "demos/_collectives_run.html",
    "demos/_collectives_summary.html",
    "demos/_failure.html",
    "demos/_mixed_precision_rows.html",
    "demos/_mixed_precision_run.html",
    "demos/_mixed_precision_summary.html",
    "demos/_passes.html",
    "demos/_pipeline_schedules_rows.html",
    "demos/_pipeline_schedules_run.html",
    "demos/_pipeline_schedules_summary.html",
    "demos/_run_errors.html",
    "demos/_share.html",
    "demos/_stream.html",
    "demos/_tensor_parallel_rows.html",
    "demos/_tensor_parallel_run.html",
    "demos/_tensor_parallel_summary.html",
    "demos/_zero_stages_run.html",
    "demos/_zero_stages_summary.html",
    "demos/activation_checkpointing.html",
    "demos/all_reduce.html",
    "demos/collectives.html",
    "demos/mixed_precision.html",
    "demos/pipeline_schedules.html",
    "demos/tensor_parallel.html",
    "demos/zero_stages.html",
}

# Words that read the same in every language: names, hardware, units, abbreviations.
NOT_TRANSLATED = {
    "ShardLab", "FSRS", "KaTeX", "JSON", "UTC", "GPU", "GPUs", "CPU", "NCCL", "gloo",
    "ZeRO", "DDP", "TP", "PP", "DP", "EP", "CP", "MFU", "FLOPs", "TFLOP", "GB", "GiB", "MB",
    "ms", "s", "min", "HBM", "TB", "KB", "KiB", "MiB", "H100", "H200", "A100", "B200",
    "fp16", "bf16", "fp32", "fp8",
}  # fmt: skip
# Elements whose text is code or data, and attributes a reader sees.
CODE_ELEMENTS = {"code", "pre", "script", "style", "kbd", "samp", "var"}
SHOWN_ATTRIBUTES = {"title", "aria-label", "placeholder", "alt"}


def _without_jinja(source: str) -> str:
    """The template's HTML with every tag and expression made a space and every {% trans %}
    block left out, so what remains as text is what no gettext call wraps. The text of a block
    that fills in a class name ({% block main_class %}) is not shown either."""
    tokens = [(k, v) for _, k, v in templates.env.lex(source) if k != "whitespace"]
    out, open_blocks = [], []  # per open trans/block: whether its text is hidden
    for i, (kind, value) in enumerate(tokens):
        if kind == "data" and not any(open_blocks):
            out.append(value)
        elif kind in {"block_end", "variable_end", "comment_end"}:
            out.append(" ")
        elif kind == "name" and tokens[i - 1][0] == "block_begin":
            if value == "trans":
                open_blocks.append(True)
            elif value == "block":
                open_blocks.append(tokens[i + 1][1].endswith("_class"))
            elif value in {"endtrans", "endblock"}:
                open_blocks.pop()
    return "".join(out)


class _TextFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._code_depth = 0
        self._open: list[str] = []  # the code elements open now, innermost last

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # KaTeX renders <span class="math">; a formula is not prose.
        if tag in CODE_ELEMENTS or "math" in (dict(attrs).get("class") or "").split():
            self._code_depth += 1
            self._open.append(tag)
        self.found += [v for k, v in attrs if k in SHOWN_ATTRIBUTES and v and _has_words(v)]

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag == self._open[-1]:
            self._open.pop()
            self._code_depth -= 1

    def handle_data(self, data: str) -> None:
        if not self._code_depth and _has_words(data):
            self.found.append(" ".join(data.split()))


def _has_words(text: str) -> bool:
    text = re.sub(r"\S+\.json\b|^\s*[{\[].*", " ", text)  # file names, JSON examples
    words = re.findall(r"[A-Za-z][A-Za-z0-9'’-]*", text)
    # One letter is a symbol from the formulas (N<sub>d</sub>, B, L), not a word.
    return any(len(w) > 1 and w not in NOT_TRANSLATED for w in words)


def untranslated_text(path: Path) -> list[str]:
    finder = _TextFinder()
    finder.feed(_without_jinja(path.read_text()))
    finder.close()
    return finder.found


ALL_TEMPLATES = sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.html"))


def test_the_catalogue_compiles_with_no_fuzzy_or_empty_translation() -> None:
    with PO_PATH.open("rb") as po:
        catalog = read_po(po, locale="zh_CN")
    fuzzy = [m.id for m in catalog if m.id and m.fuzzy]
    empty = [m.id for m in catalog if m.id and not all(_strings(m.string))]
    assert fuzzy == [] and empty == []
    # What `pybabel compile` checks: a translation keeps the original's %(name)s placeholders.
    assert [(m.id, errors) for m, errors in catalog.check()] == []
    assert translations.__wrapped__("zh").gettext("Cards") == "卡片"


def _strings(string: str | tuple[str, ...]) -> tuple[str, ...]:
    return (string,) if isinstance(string, str) else string


def test_the_catalogue_has_every_string_the_sources_mark() -> None:
    with PO_PATH.open("rb") as po:
        translated = {m.id if isinstance(m.id, str) else m.id[0] for m in read_po(po) if m.id}
    with (ROOT_DIR / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found = extract_from_dir(ROOT_DIR, method_map, options_map)
    marked = {msg if isinstance(msg, str) else msg[0] for _, _, msg, _, _ in found}
    assert marked - translated == set(), "run scripts/i18n extract, then translate"


@pytest.mark.parametrize("name", [n for n in ALL_TEMPLATES if n not in UNTRANSLATED_TEMPLATES])
def test_no_template_string_is_left_untranslated(name: str) -> None:
    assert untranslated_text(TEMPLATES / name) == []


@pytest.mark.parametrize("name", sorted(UNTRANSLATED_TEMPLATES))
def test_the_untranslated_list_only_shrinks(name: str) -> None:
    assert (TEMPLATES / name).exists() and untranslated_text(TEMPLATES / name), (
        f"{name} is clean now: take it off UNTRANSLATED_TEMPLATES"
    )


@pytest.mark.parametrize("name", ALL_TEMPLATES)
def test_no_percent_sign_in_a_trans_block_without_variables(name: str) -> None:
    """Jinja looks a block that names no variable up as "%%" but pybabel extracts it as "%", so
    it would never be translated: write it as _("… %% …") instead."""
    blocks = re.findall(r"{%-? trans -?%}(.*?){%-? endtrans", (TEMPLATES / name).read_text(), re.S)
    assert [b for b in blocks if "%" in b and "{{" not in b] == []


def test_the_checker_finds_text_outside_trans_and_ignores_code(tmp_path: Path) -> None:
    page = tmp_path / "probe.html"
    page.write_text(
        '<p title="Hover text" class="wide">{{ _("Done") }} Left over <code>torch.cuda</code></p>'
        "{% trans n=1 %}Wrapped {{ n }}{% endtrans %} <span>8 GiB</span>{# a comment #}"
    )
    assert untranslated_text(page) == ["Hover text", "Left over"]


def test_lang_zh_shows_the_header_in_chinese(client: TestClient) -> None:
    page = client.get("/", params={"lang": "zh"})
    assert '<html lang="zh-CN">' in page.text
    assert ">卡片</a>" in page.text and ">计算器</a>" in page.text and ">登录</a>" in page.text
    assert ">Calculators</a>" not in page.text
    assert page.cookies.get("lang") == "zh" and "Accept-Language" in page.headers["vary"]


def test_accept_language_zh_cn_gives_chinese(client: TestClient) -> None:
    page = client.get("/", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert '<html lang="zh-CN">' in page.text and ">测验</a>" in page.text
    english = client.get("/", headers={"Accept-Language": "en-GB,en;q=0.9"})
    assert '<html lang="en">' in english.text and ">Quiz</a>" in english.text


def test_the_switch_links_to_the_same_page_in_the_other_language(client: TestClient) -> None:
    english = client.get("/cards", params={"tag": "memory"}).text
    link = re.search(r'<a class="language-switch" href="([^"]+)"[^>]*>中文</a>', english)
    assert link and link.group(1) == "/cards?tag=memory&amp;lang=zh"
    chinese = client.get(link.group(1).replace("&amp;", "&")).text
    assert "<h1>知识卡片</h1>" in chinese
    assert re.search(r'class="language-switch" href="/cards\?tag=memory&amp;lang=en"', chinese)


def test_a_users_setting_wins_over_the_cookie_and_the_header(client: TestClient) -> None:
    register(client, "lin")
    client.cookies.set("lang", "en")
    english_browser = {"Accept-Language": "en-US"}
    assert ">Cards</a>" in client.get("/", headers=english_browser).text
    token = csrf_token(client)
    form = {"language": "zh", "next": "/progress", "csrf_token": token}
    saved = client.post("/account/language", data=form, follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == "/progress"
    page = client.get("/", headers=english_browser).text
    assert ">卡片</a>" in page and '<html lang="zh-CN">' in page
    # ?lang= is a one-off that a shared link carries; it wins, and leaves the setting alone.
    assert ">Cards</a>" in client.get("/", params={"lang": "en"}).text
    assert ">卡片</a>" in client.get("/quiz").text
    # The setting can be cleared from the progress page: back to the cookie.
    form = {"language": "", "next": "/progress", "csrf_token": token}
    client.post("/account/language", data=form)
    client.cookies.set("lang", "en")
    assert ">Cards</a>" in client.get("/").text


def test_a_signed_in_users_switch_posts_their_setting(client: TestClient) -> None:
    register(client, "mei")
    page = client.get("/cards").text
    assert 'action="/account/language"' in page and 'value="zh"' in page
    assert 'id="language-setting"' in client.get("/progress").text


def test_the_setting_needs_a_signed_in_user(client: TestClient) -> None:
    token = csrf_token(client)
    response = client.post(
        "/account/language", data={"language": "zh", "csrf_token": token}, follow_redirects=False
    )
    assert response.status_code in {303, 401}


CALCULATOR_PAGES = ["memory", "training-memory", "communication", "pipeline", "compute", "roofline",
                    "inference-memory", "failures", "planner"]  # fmt: skip


@pytest.mark.parametrize("name", CALCULATOR_PAGES)
def test_lang_is_not_a_calculator_input(client: TestClient, name: str) -> None:
    """?lang= picks the language only: the page opens with its defaults, as without it."""
    page = client.get(f"/calculators/{name}", params={"lang": "zh"})
    assert page.status_code == 200 and '<html lang="zh-CN">' in page.text
    assert 'class="errors"' not in page.text


def test_lang_is_not_a_demo_input(client: TestClient) -> None:
    page = client.get("/demos/all-reduce", params={"lang": "zh"})
    assert page.status_code == 200 and '<html lang="zh-CN">' in page.text
