"""The UI in Chinese: the catalogue, every template's text wrapped for translation, and the
language a page is shown in (?lang=, the user's setting, the cookie, Accept-Language)."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient
from markupsafe import escape

from app.config import ROOT_DIR
from app.i18n import TRANSLATIONS_DIR, translations
from app.templating import templates
from tests.utils import csrf_token, register

PO_PATH = TRANSLATIONS_DIR / "zh_CN" / "LC_MESSAGES" / "messages.po"
TEMPLATES = ROOT_DIR / "templates"

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


@pytest.mark.parametrize("name", ALL_TEMPLATES)
def test_no_template_string_is_left_untranslated(name: str) -> None:
    assert untranslated_text(TEMPLATES / name) == []


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


# What Python defines and a page shows: marked with N_() where it is defined, translated by the
# templates' |t filter (app.i18n.translate) in the request's language.


def _zh(message: str) -> str:
    return translations.__wrapped__("zh").gettext(message)


def _marked() -> set[str]:
    with (ROOT_DIR / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found = extract_from_dir(ROOT_DIR, method_map, options_map)
    return {msg if isinstance(msg, str) else msg[0] for _, _, msg, _, _ in found}


def _calc_labels() -> dict[str, str]:
    """Every label app.calc defines for a page, by where it comes from (app.calc has no i18n:
    app/calculators/labels.py marks them)."""
    import importlib

    from app.calc import flops, hardware, memory, pipeline, precision
    from app.calc.communication_query import STRATEGY_LABELS
    from app.calc.failures_query import RATE_KINDS
    from app.calc.roofline_query import OPERATIONS

    found: dict[str, str] = {}
    for path in sorted((ROOT_DIR / "app" / "calc").glob("*_query.py")):
        module = importlib.import_module(f"app.calc.{path.stem}")
        found |= dict.fromkeys(getattr(module, "LABELS", {}).values(), f"{path.stem}.LABELS")
    tables = {
        "STRATEGY_LABELS": STRATEGY_LABELS, "SCHEDULE_NAMES": pipeline.SCHEDULE_NAMES,
        "ZERO_STAGE_NAMES": memory.ZERO_STAGE_NAMES, "MODE_LABELS": flops.MODE_LABELS,
        "DTYPE_LABELS": hardware.DTYPE_LABELS, "RATE_KINDS": RATE_KINDS, "OPERATIONS": OPERATIONS,
        "RECIPES": precision.RECIPES, "OPTIMIZERS": precision.OPTIMIZERS,
    }  # fmt: skip
    for name, table in tables.items():
        found |= dict.fromkeys(table.values(), name)
    for c in precision.conventions():
        found |= {c.label: "conventions", c.explanation: "conventions"}
    return found


def test_every_label_app_calc_shows_is_marked_for_translation() -> None:
    marked = _marked()
    missing = {label: where for label, where in _calc_labels().items()
               if _has_words(label) and label not in marked}  # fmt: skip
    assert missing == {}, "add them to app/calculators/labels.py"


def test_every_built_in_profiles_title_is_marked() -> None:
    from app.calc.profiles import built_in
    from app.calculators.calibration_view import profile_title, short_title

    titles = {profile_title(name) for name in built_in()}
    assert titles - set(built_in()), "each built-in profile has a title"
    shown = titles | {short_title(title) for title in titles}
    assert shown - _marked() == set(), "add them to app/calculators/labels.py"


def test_every_collective_the_communication_page_lists_is_marked() -> None:
    import itertools

    from app.calc.communication_query import CommunicationQuery, communication_result

    labels = set()
    for moe, dp, tp, pp, ep, cp, zero, sp in itertools.product(
        (False, True), (1, 8), (1, 2), (1, 2), (1, 2), (1, 2), (0, 1, 2, 3), (False, True),
    ):  # fmt: skip
        preset = {"preset": "mixtral-8x7b"} if moe else {}
        try:
            query = CommunicationQuery(**preset, dp=dp, tp=tp, pp=pp, ep=ep, cp=cp,
                                       zero_stage=zero, sequence_parallel=sp)  # fmt: skip
        except ValueError:
            continue  # ep > 1 on a dense model
        labels |= {row["label"] for row in communication_result(query)["collectives"]}
    assert len(labels) >= 20 and labels - _marked() == set()


def test_every_role_the_tensor_parallel_demo_shows_is_marked() -> None:
    from app.calc.tensor_parallel import PASSES, TPLayout, tp_block_collectives

    shown = set(PASSES)
    for layout in TPLayout:
        shown |= {c.role for c in tp_block_collectives(layout, 8, 16, 64, 4)}
    assert shown - _marked() == set()


def test_translate_keeps_a_tail_markup_and_percent_signs() -> None:
    from markupsafe import Markup

    from app.i18n import _language, translate

    token = _language.set("zh")
    try:
        assert translate("Weights (CPU)") == f"{_zh('Weights')} (CPU)"
        assert translate("KV cache (fp8)") == f"{_zh('KV cache')} (fp8)"
        assert translate("Not marked anywhere (really)") == "Not marked anywhere (really)"
        assert translate("100 % sure") == "100 % sure"  # not a format string
        assert translate(Markup("<b>Weights</b>")) == Markup("<b>Weights</b>")
        assert translate("") == "" and translate(None) is None
    finally:
        _language.reset(token)
    assert translate("Weights (CPU)") == "Weights (CPU)"  # English outside a request


def test_a_demo_page_in_chinese_has_no_english_from_python(client: TestClient) -> None:
    from app.live.pages import DEMO_PAGES

    index = client.get("/demos", params={"lang": "zh"}).text
    page = client.get("/demos/all-reduce", params={"lang": "zh"}).text
    title, teaches = DEMO_PAGES["all-reduce"].title, DEMO_PAGES["all-reduce"].teaches
    assert f"<h1>{_zh(title)}</h1>" in page and f"<title>{_zh(title)}" in page
    assert _zh(teaches) in index and teaches not in index
    for english in (title, "Buffer size", "Iterations", "Run on the worker", "learn it on"):
        assert english not in page
    english = client.get("/demos/all-reduce", params={"lang": "en"}).text
    assert "<h1>All-reduce on real ranks</h1>" in english


def test_a_demo_form_error_in_chinese(client: TestClient) -> None:
    params = {"size_mib": "100", "iterations": "x", "lang": "zh"}
    panel = client.get("/demos/all-reduce/run", params=params)
    assert panel.status_code == 422
    assert f"{_zh('Buffer size (MiB)')}：{_zh('must be at most %(n)s') % {'n': 64}}" in panel.text
    assert f"{_zh('Iterations')}：{_zh('must be a whole number')}" in panel.text
    assert "must be" not in panel.text and "Buffer size" not in panel.text
    english = client.get("/demos/all-reduce/run", params={**params, "lang": "en"}).text
    assert "Buffer size (MiB): must be at most 64" in english


def test_a_calculator_page_in_chinese_has_no_english_labels_from_python(
    client: TestClient,
) -> None:
    from app.calc.communication_query import CommunicationQuery, communication_result

    query = {"dp": "8", "tp": "2", "pp": "2", "zero_stage": "0"}
    page = client.get("/calculators/communication", params={**query, "lang": "zh"}).text
    rows = communication_result(CommunicationQuery.model_validate(query))["collectives"]
    labels = {"Data parallel", "Tensor parallel", "Pipeline parallel", "All communication"}
    labels |= {row["label"] for row in rows}
    assert {"Gradient all-reduce", "Send activations (forward)"} <= labels
    for label in labels:
        assert label not in page and _zh(label) in page
    assert "数据并行" in page
    planner = client.get("/calculators/planner", params={"lang": "zh"}).text
    assert _zh("Pipeline bubble") in planner and "Exposed DP communication" not in planner
    training = client.get("/calculators/training-memory", params={"lang": "zh"}).text
    assert _zh("Optimizer states") in training and "This set-up" not in training
    offload = {"offload_params": "true", "zero_stage": "3", "lang": "zh"}
    offloaded = client.get("/calculators/training-memory", params=offload).text
    assert f"{_zh('Weights')} (CPU)" in offloaded


def test_a_calculator_form_error_in_chinese(client: TestClient) -> None:
    page = client.get("/calculators/communication", params={"dp": "0", "lang": "zh"})
    assert page.status_code == 422
    assert f"{_zh('Data parallel (DP)')}：{_zh('must be at least %(n)s') % {'n': 1}}" in page.text


# A rule across fields, a refused layout: app.calc says it in English (app.calc.messages), and
# a page says it again in the reader's language.


def test_a_calculator_rule_across_fields_in_chinese(client: TestClient) -> None:
    query = {"preset": "llama3-70b", "tp": "3", "cp": "3", "seq_len": "8192"}
    page = client.get("/calculators/training-memory/result", params={**query, "lang": "zh"})
    assert page.status_code == 422
    tp = _zh("Tensor parallel (TP) must divide the attention heads")
    cp = _zh("Context parallel (CP) must divide the sequence length")
    assert f"{tp}; {cp}" in page.text and "must divide" not in page.text
    path = "/calculators/training-memory/result"
    english = client.get(path, params={**query, "lang": "en"}).text
    assert (
        "Tensor parallel (TP) must divide the attention heads; "
        "Context parallel (CP) must divide the sequence length"
    ) in english


def test_an_inner_rule_of_app_calc_in_chinese(client: TestClient) -> None:
    """The inference calculator's own check, passed up by the query as a sentence."""
    query = {"preset": "llama2-70b", "tp": "3"}
    page = client.get("/calculators/inference-memory", params={**query, "lang": "zh"}).text
    template = "tensor parallel (%(tp)s) must divide the %(heads)s attention heads"
    assert _zh(template) % {"tp": 3, "heads": 64} in page and "must divide" not in page
    english = client.get("/calculators/inference-memory", params={**query, "lang": "en"}).text
    assert "Tensor parallel (3) must divide the 64 attention heads" in english


def test_a_demo_rule_across_fields_in_chinese(client: TestClient) -> None:
    params = {"hidden": "256", "heads": "3", "lang": "zh"}
    panel = client.get("/demos/tensor-parallel/run", params=params)
    assert panel.status_code == 422
    said = _zh("heads (%(heads)s) must divide hidden (%(hidden)s)") % {"heads": 3, "hidden": 256}
    assert said in panel.text and "must divide" not in panel.text
    english = client.get("/demos/tensor-parallel/run", params={**params, "lang": "en"}).text
    assert "heads (3) must divide hidden (256)" in english


def test_a_demo_fields_own_rule_in_chinese(client: TestClient) -> None:
    panel = client.get("/demos/ddp-vs-zero/run", params={"model_scale": "3", "lang": "zh"})
    assert panel.status_code == 422
    said = _zh("must be one of %(scales)s") % {"scales": "1, 2, 4, 8"}
    assert f"{_zh('Model scale')}：{said}" in panel.text
    assert "must be" not in panel.text and "Value error" not in panel.text


def test_the_planner_says_why_a_layout_is_refused_in_chinese(client: TestClient) -> None:
    from app.calc.planner import RULES

    page = client.get("/calculators/planner", params={"tp": "3", "lang": "zh"}).text
    reason = _zh("tp=%(tp)s does not divide %(heads)s attention heads") % {"tp": 3, "heads": 32}
    assert reason in page and _zh(RULES["tp_divides_heads"].template) in page
    assert _zh("not a valid layout (%(reasons)s)").split("%")[0] in page
    # Every rule the page names, the refused layout's and those that cut the search, and
    # every reason: none left in English.
    shown = set(re.findall(r'data-rule="(\w+)"', page))
    assert {"tp_divides_heads", "out_of_memory"} <= shown
    for rule in shown:
        assert str(RULES[rule]) not in page
    for english in (
        "does not divide",
        "not a valid layout",
        "per GPU, has",
        "FlashAttention is on",
    ):
        assert english not in page


def test_the_api_says_the_same_rules_in_english(client: TestClient) -> None:
    client.cookies.set("lang", "zh")
    answer = client.get("/api/calc/planner", params={"tp": "3"}).json()["why_not"]
    assert answer["explanation"].startswith("not a valid layout (world_size: dp*tp*pp*cp = 6")
    broken = {b["rule"]: b["reason"] for b in answer["broken"]}
    assert broken["tp_divides_heads"] == "tp=3 does not divide 32 attention heads"
    refused = client.get("/api/calc/training-memory", params={"tp": "3", "cp": "3"})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["msg"] == (
        "Value error, Tensor parallel (TP) must divide the attention heads; "
        "Context parallel (CP) must divide the sequence length"
    )


def test_the_api_stays_english_whatever_the_language(client: TestClient) -> None:
    client.cookies.set("lang", "zh")
    answer = client.get(
        "/api/calc/communication", params={"dp": 8}, headers={"Accept-Language": "zh-CN"}
    )
    labels = {s["label"] for s in answer.json()["strategies"]}
    assert "Data parallel" in labels and "lang=" not in answer.headers.get("set-cookie", "")


@pytest.mark.parametrize("slug", ["all-reduce", "collectives", "ddp-vs-zero", "tensor-parallel",
                                  "pipeline-schedules", "mixed-precision",
                                  "activation-checkpointing"])  # fmt: skip
def test_every_run_panel_renders_in_chinese(slug: str) -> None:
    """A run panel needs a worker to be reached over HTTP: render it as the route does, with
    the page's default parameters on two ranks, in both languages."""
    from app.i18n import _language
    from app.live.pages import DEMO_PAGES

    page = DEMO_PAGES[slug]
    params = page.params()
    context = {"page": page, "params": params, "prediction": page.predict(params, 2),
               "world_size": 2, "status": {"world_size": 2, "backend": "gloo"},
               "stream_url": "/stream", "request": None}  # fmt: skip
    template = templates.env.get_template(f"demos/_{page.demo}_run.html")
    token = _language.set("zh")
    try:
        chinese = template.render(**context)
    finally:
        _language.reset(token)
    english = template.render(**context)
    heading = "simulator" if slug == "pipeline-schedules" else "calculator"
    assert _zh(f"Predicted by the {heading}") in chinese
    assert "Predicted by the" in english and "Predicted by the" not in chinese
    assert escape(_zh(page.passes)) in chinese and escape(page.passes) in english


# The pipeline's and the demos' run-time messages: Messages too, said again on a Chinese page,
# the same English everywhere else.


def _render(template_name: str, lang: str, **context: object) -> str:
    """A fragment rendered as its route does, in `lang`: a run panel needs a worker over HTTP."""
    from app.i18n import _language

    token = _language.set(lang)
    try:
        return templates.env.get_template(template_name).render(request=None, **context)
    finally:
        _language.reset(token)


def _demo_context(slug: str, **params: object) -> dict[str, object]:
    from app.live.pages import DEMO_PAGES

    page = DEMO_PAGES[slug]
    spec = page.params(**params)
    return {"page": page, "params": spec, "prediction": page.predict(spec, 2), "world_size": 2,
            "status": {"world_size": 2, "backend": "gloo"}, "stream_url": "/stream"}  # fmt: skip


INTERLEAVED_NEEDS_GROUPS = (
    "the interleaved schedule needs micro-batches to be a multiple of the stages"
)


def test_the_pipeline_calculator_says_a_refused_set_up_in_chinese(client: TestClient) -> None:
    query = {"schedule": "interleaved", "pp": "4", "microbatches": "6", "lang": "zh"}
    refused = client.get("/calculators/pipeline/result", params=query)
    assert refused.status_code == 422
    assert _zh(INTERLEAVED_NEEDS_GROUPS) in refused.text
    assert "multiple of the stages" not in refused.text
    page = client.get("/calculators/pipeline", params={**query, "schedule": "1f1b"}).text
    note = _zh("%(schedule)s: %(problems)s.") % {
        "schedule": _zh("Interleaved 1F1B"),
        "problems": _zh(INTERLEAVED_NEEDS_GROUPS),
    }
    assert str(escape(note)) in page and "multiple of the stages" not in page
    too_big = {"pp": "32", "microbatches": "128", "virtual_stages": "4", "lang": "zh"}
    refused = client.get("/calculators/pipeline/result", params=too_big)
    assert refused.status_code == 422
    most = _zh(
        "Stages × micro-batches × model chunks must be at most %(most)s "
        "(the chart draws every block)"
    )
    assert most % {"most": "8,192"} in refused.text and "the chart draws" not in refused.text


def test_the_pipeline_demo_panel_says_a_refused_schedule_in_chinese() -> None:
    context = _demo_context("pipeline-schedules", microbatches=5)  # 2 ranks: m // p = 2 rounds
    panel = _render("demos/_pipeline_schedules_run.html", "zh", **context)
    rounds = _zh(
        "torch's ZB-H1 runs the micro-batches in %(rounds)s equal rounds (m // p), so m must "
        "be a multiple of %(rounds)s"
    ) % {"rounds": 2}
    not_run = _zh("Not run on %(world_size)s ranks: %(problems)s.")
    assert escape(not_run % {"world_size": 2, "problems": rounds}) in panel
    assert escape(not_run % {"world_size": 2, "problems": _zh(INTERLEAVED_NEEDS_GROUPS)}) in panel
    assert "equal rounds" not in panel and "multiple of the stages" not in panel
    # After the run the worker's words are English; the page says its own.
    summary = {"schedules": [], "skipped": {"zb-h1": "torch's ZB-H1 runs (the worker's words)"}}
    shown = _render("demos/_pipeline_schedules_summary.html", "zh", **context, summary=summary)
    assert escape(_zh("Not run: %(why)s.") % {"why": rounds}) in shown
    assert "the worker's words" not in shown


def test_the_tensor_parallel_panel_warns_in_chinese() -> None:
    context = _demo_context("tensor-parallel", layout="attention_heads", heads=1, hidden=32)
    panel = _render("demos/_tensor_parallel_run.html", "zh", **context)
    problem = _zh(
        "%(heads)s heads cannot be split over the worker's %(ranks)s ranks; choose a multiple of it"
    ) % {"heads": 1, "ranks": 2}
    said = _zh("The worker will refuse this: %(problem)s.") % {"problem": problem}
    assert escape(said) in panel and "cannot be split" not in panel
    english = _render("demos/_tensor_parallel_run.html", "en", **context)
    assert (
        escape(
            "The worker will refuse this: 1 heads cannot be split over the worker's 2 ranks; "
            "choose a multiple of it."
        )
        in english
    )


def test_a_device_refusal_in_chinese() -> None:
    """Gloo on CUDA tensors, which a CPU-only box never meets over HTTP: the refusal said as
    the run panel says it (app/live/router.py)."""
    from app.i18n import _language, say
    from demos.specs import DEMO_COLLECTIVES, DEMO_PARAMS
    from demos.specs.devices import job_problem

    params = DEMO_PARAMS["pipeline_schedules"]()
    collectives = DEMO_COLLECTIVES["pipeline_schedules"]
    refusal = job_problem("pipeline_schedules", collectives, params, "gloo", "cuda")
    assert refusal is not None
    token = _language.set("zh")
    try:
        said = say(refusal)
    finally:
        _language.reset(token)
    template = _zh(
        "%(demo)s needs %(collectives)s on CUDA tensors, which gloo cannot run; "
        "start the worker with --backend nccl (one GPU per rank) or --device cpu"
    )
    assert said == template % {"demo": "pipeline_schedules", "collectives": "send, recv"}
    assert "which gloo cannot run" not in said
    assert (
        say(refusal)
        == refusal
        == (
            "pipeline_schedules needs send, recv on CUDA tensors, which gloo cannot run; "
            "start the worker with --backend nccl (one GPU per rank) or --device cpu"
        )
    )


def test_the_pipeline_messages_stay_english_outside_a_chinese_page(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line, the JSON API (even for a Chinese reader) and an English page read the
    words they always have."""
    from app.calc.__main__ import main as cli

    assert cli(["pipeline", "--pp", "4", "--microbatches", "6"]) == 0
    out = capsys.readouterr().out
    assert f"{'Interleaved 1F1B':<36} cannot run: {INTERLEAVED_NEEDS_GROUPS}\n" in out
    client.cookies.set("lang", "zh")
    query = {"schedule": "1f1b", "pp": "4", "microbatches": "6"}
    comparison = client.get("/api/calc/pipeline", params=query).json()["comparison"]
    problems = {row["schedule"]: row["problem"] for row in comparison}
    assert problems["interleaved"] == INTERLEAVED_NEEDS_GROUPS and problems["1f1b"] is None
    refused = client.get("/api/calc/pipeline", params={**query, "schedule": "interleaved"})
    assert refused.json()["detail"][0]["msg"] == (
        "Value error, The interleaved schedule needs micro-batches to be a multiple of the stages"
    )
    page = client.get("/calculators/pipeline", params={**query, "lang": "en"}).text
    assert f"Interleaved 1F1B: {INTERLEAVED_NEEDS_GROUPS}." in page


# What Python puts on a Chinese page (a card's title, an error, a quiz item's kind and unit, a
# calculator's words inside a card): in Chinese, each where the browser walk-through found it
# in English.


def _between(page: str, start: str, end: str) -> str:
    """The text after `start`, up to `end`."""
    at = page.index(start) + len(start)
    return page[at : page.index(end, at)]


def test_progress_and_the_topic_picker_name_topics_by_their_chinese_titles(
    client: TestClient,
) -> None:
    register(client, "lin")
    library = client.app.state.cards  # type: ignore[attr-defined]
    table = _between(client.get("/progress", params={"lang": "zh"}).text, 'id="topics"', "</table>")
    picker = _between(
        client.get("/quiz", params={"lang": "zh"}).text, '<select name="topic"', "</select>"
    )
    rows = 0
    for card in library.all():
        chinese = library.edition(card.meta.id, "zh").meta.title
        if f'data-card="{card.meta.id}"' in table:
            rows += 1
            assert f">{escape(chinese)}</a>" in table
            assert f">{escape(card.meta.title)}</a>" not in table
            assert f'value="{card.meta.id}">{escape(chinese)}</option>' in picker
    assert rows == len(library.all()) >= 50
    english = client.get("/progress", params={"lang": "en"}).text
    assert f">{escape(library.all()[0].meta.title)}</a>" in english


def test_account_errors_and_a_missing_card_in_chinese(client: TestClient) -> None:
    def post(path: str, username: str, password: str) -> str:
        form = {"username": username, "password": password, "csrf_token": csrf_token(client)}
        return client.post(path, data=form, params={"lang": "zh"}).text

    wrong = post("/login", "nobody", "not the password")
    assert _zh("Wrong username or password") in wrong and "Wrong username" not in wrong
    register(client, "ada")
    client.post("/logout", data={"csrf_token": csrf_token(client)})
    taken = post("/register", "ada", "correct horse")
    assert _zh("Username: already taken, pick another") in taken and "already taken" not in taken
    short = post("/register", "x", "correct horse")
    assert "string should" not in short and "至少要 3 个字符" in short
    html = {"Accept": "text/html"}
    missing = client.get("/cards/nope", params={"lang": "zh"}, headers=html)
    assert missing.status_code == 404 and "No card called" not in missing.text
    assert _zh("no card called '%(card)s'") % {"card": "nope"} in missing.text
    english = client.get("/cards/nope", params={"lang": "en"}, headers=html).text
    assert "No card called &#39;nope&#39;" in english


def test_a_quiz_in_chinese_says_ratings_kinds_labels_and_tolerances_in_chinese(
    client: TestClient,
) -> None:
    from app.quiz.items import FlashcardItem, GeneratedItem, NumericItem, SingleChoiceItem

    register(client, "mei")
    token = csrf_token(client)

    def answer(item_id: str, **fields: str) -> str:
        form = {"item_id": item_id, "shown_at": "0", "hinted": "0", "mode": "practice",
                "csrf_token": token, **fields}  # fmt: skip
        return client.post("/quiz/answer", data=form, params={"lang": "zh"}).text

    def verdict(page: str) -> str:
        return _between(page, '<p class="verdict">', "</p>")

    rated = verdict(answer("common-myths-gpipe-bubble", rating="3"))
    assert _zh("Rated %(rating)s.") % {"rating": _zh("Good")} in rated and "Good" not in rated
    assert "UTC</time>。" in rated  # Chinese punctuation around the next review
    counted = verdict(answer("common-myths-zero2-accumulation", answer="9"))
    assert "（允许误差 ±0.5）。" in counted and "accepted" not in counted
    inputs = {"in_model": "0", "in_dp": "8", "in_zero_stage": "0", "in_recipe": "0",
              "in_optimizer": "0", "answer": "100"}  # fmt: skip
    worked = answer("memory-anatomy-model-states-unsharded", **inputs)
    assert "（允许误差 ±2 %）。" in verdict(worked)
    for label in ("Weights", "Gradients", "Master weights", "Optimizer states"):
        assert rf"\text{{{_zh(label)}}}:" in worked and rf"\text{{{label}}}" not in worked
    refused = answer("common-myths-zero2-accumulation", answer="abc")
    assert _zh("type a number, e.g. 16.6 or 1.5e9") in refused and "type a number" not in refused
    progress = client.get("/progress", params={"lang": "zh"}).text
    recent = _between(progress, 'id="attempts"', "</table>")  # a flashcard's answer: its rating
    assert f">{_zh('Good')}</td>" in recent and ">Good</td>" not in recent
    status = _between(client.get("/quiz", params={"lang": "zh"}).text, "status-line", "</p>")
    kinds = (SingleChoiceItem, FlashcardItem, NumericItem, GeneratedItem)
    assert any(f"· {_zh(kind.kind_label)} ·" in status for kind in kinds)
    assert not re.search(r"· (single|multiple|numeric|generated|flashcard) ·", status)


def test_an_answers_unit_is_said_in_the_readers_language_or_not_at_all(client: TestClient) -> None:
    """A count has no unit: the label is not "你的答案（单位：）" (the ZeRO-2 item of /mock)."""
    from app.quiz.service import draw_question

    bank = client.app.state.quiz  # type: ignore[attr-defined]

    def label(item_id: str, lang: str) -> str:
        question = draw_question(bank.in_language(bank.get(item_id), lang), random.Random(0))
        fields = _render("quiz/_answer_fields.html", lang, question=question, shown_at=0)
        return " ".join(_between(fields, "<label>", "<input").split())

    assert bank.get("common-myths-zero2-accumulation").unit == ""
    assert label("common-myths-zero2-accumulation", "zh") == _zh("Your answer")
    assert label("common-myths-zero2-accumulation", "en") == "Your answer"
    assert bank.get("training-time-mfu-days").unit == "days"
    unit = _zh("Your answer, in %(unit)s") % {"unit": _zh("days")}
    assert label("training-time-mfu-days", "zh") == unit == "你的答案（单位：天）"
    assert label("training-time-mfu-days", "en") == "Your answer, in days"


def test_calculator_pages_in_chinese_have_no_english_words_of_their_own(client: TestClient) -> None:
    def page(name: str, **inputs: str) -> str:
        return client.get(f"/calculators/{name}", params={**inputs, "lang": "zh"}).text

    failures = page("failures", units="20")  # a job MTBF over two days: said in days
    assert not re.search(r"\d days", failures) and re.search(
        r"id=\"job-mtbf\">[\d.,]+ 天<", failures
    )
    english = client.get("/calculators/failures", params={"units": "20", "lang": "en"}).text
    assert re.search(r"id=\"job-mtbf\">[\d.,]+ days<", english)
    memory = page("memory")
    assert "<th>Stage</th>" not in memory and f"<th>{_zh('Stage')}</th>" in memory
    planner = page("planner")
    assert "Micro-batch b" not in planner and _zh("Micro-batch b") in planner
    training = page("training-memory")
    assert ">Selective</option>" not in training and f">{_zh('Selective')}</option>" in training


def test_chinese_cards_say_the_calculators_words_in_chinese(client: TestClient) -> None:
    layout = client.get("/cards/choosing-a-parallel-layout", params={"lang": "zh"}).text
    why_not = _between(layout, 'class="planner-why-not"', "</ul>")
    for english in ("the best step time", "the largest gap", "not a valid layout", "</code>: "):
        assert english not in why_not
    assert "</code>：" in why_not
    assert _zh("not a valid layout (%(reasons)s)").split("%")[0] in why_not
    terms = _between(layout, 'class="planner-terms"', "</table>")
    assert _zh("Exposed TP communication") in terms and "exposed_tp" not in terms
    english = client.get("/cards/choosing-a-parallel-layout", params={"lang": "en"}).text
    assert "the best step time" in english and '<th class="num">Pipeline bubble</th>' in english
    mixed = client.get("/cards/mixed-precision", params={"lang": "zh"}).text
    assert "the weights are already fp32" not in mixed
    assert _zh("none: the weights are already fp32") in mixed
    for card in ("adam-bytes-per-parameter", "scaling-walls"):
        page = client.get(f"/cards/{card}", params={"lang": "zh"}).text
        assert "No data-parallel peers" not in page
        assert _zh("No data-parallel peers: no gradient buckets or gathers") in page


def test_a_source_is_said_part_by_part_and_its_citations_kept() -> None:
    from app.i18n import _language, translate_source

    words = "with optimizer offload the gradient shard lives in CPU memory"
    citation = (
        "(Ren et al., ZeRO-Offload, arXiv:2101.06840, Section 4; "
        "DeepSpeed estimate_zero2_model_states_mem_needs)"
    )
    zero = "Rajbhandari et al., ZeRO, Section 5.1 (stage 2 shards)"
    source = f"fp32 gradients (4 B); {zero}; {words} {citation}"
    token = _language.set("zh")
    try:
        said = translate_source(source)
    finally:
        _language.reset(token)
    assert said == f"{_zh('fp32 gradients (4 B)')}; {zero}; {_zh(words)} {citation}"
    assert translate_source(source) == source  # English outside a Chinese request


def test_the_compute_and_roofline_formulas_say_their_words_in_chinese(client: TestClient) -> None:
    compute = client.get("/calculators/compute", params={"lang": "zh"}).text
    assert r"\text{GPU·小时}" in compute and r"\text{GPU-h}" not in compute
    assert r"\text{days}" not in compute
    english = client.get("/calculators/compute", params={"lang": "en"}).text
    assert r"\text{GPU-h}" in english and r"\text{days}" in english
    roofline = client.get("/calculators/roofline", params={"lang": "zh"}).text
    assert r"\text{peak}" not in roofline and r"\text{bandwidth}" not in roofline
    english = client.get("/calculators/roofline", params={"lang": "en"}).text
    assert r"\text{peak}" in english and r"\text{bandwidth}" in english
