"""Kept parts of pages (app/page_cache.py): a kept block is the one the template alone would
render, a second view is served from it, another language or other inputs are another block,
and nothing of one user's (their name, their CSRF token) ever reaches another's page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient
from jinja2 import nodes

from app.calculators.planner_router import planner_context
from app.calculators.training_router import page_context as training_context
from app.cards.router import card_values
from app.config import Settings
from app.language import request_language
from app.main import create_app
from app.page_cache import KEPT, PAGES, LruCache
from app.templating import templates
from tests.utils import log_out, register

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
HEADER_TOKEN = re.compile(r'"X-CSRF-Token": "([^"]+)"')
CARD = "/cards/zero-stages"  # a card with "Check yourself" boxes: forms that carry the token
TRAINING = "/calculators/training-memory?preset=llama3-70b&dp=4&tp=8&pp=2&seq_len=8192"
PLANNER = "/calculators/planner?preset=llama3-8b&nodes=1&global_batch_tokens=1048576"


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    KEPT.clear()  # each test counts its own hits
    PAGES.clear()
    app = create_app(settings)

    # The same pages rendered whole by TemplateResponse, as the routes rendered them before
    # their main blocks were kept: what a kept page must equal, byte for byte. Each says it is
    # at the kept page's path, which the header reads (the link to the current section).
    @app.get("/whole/card", response_class=HTMLResponse)
    def whole_card(request: Request) -> HTMLResponse:
        request.scope["path"] = CARD
        library, lang = request.app.state.cards, request_language(request)
        card = library.shown_in("zero-stages", lang)
        values = card_values(library, request.app.state.quiz, card, lang)
        return templates.TemplateResponse(request, "cards/card.html", values)

    @app.get("/whole/training", response_class=HTMLResponse)
    def whole_training(request: Request) -> HTMLResponse:
        request.scope["path"] = TRAINING.partition("?")[0]
        values, status = training_context(request)
        return templates.TemplateResponse(request, "calculators/training.html", values, status)

    @app.get("/whole/planner", response_class=HTMLResponse)
    def whole_planner(request: Request) -> HTMLResponse:
        request.scope["path"] = PLANNER.partition("?")[0]
        values, status = planner_context(request)
        return templates.TemplateResponse(request, "calculators/planner.html", values, status)

    with TestClient(app) as test_client:
        yield test_client


def _query(url: str) -> str:
    return url.partition("?")[2]


@pytest.mark.parametrize(
    ("kept", "whole"),
    [(CARD, "/whole/card"), (TRAINING, "/whole/training?" + _query(TRAINING)),
     (PLANNER, "/whole/planner?" + _query(PLANNER))],
)  # fmt: skip
@pytest.mark.parametrize("who", ["visitor", "learner"])
def test_a_kept_page_is_the_template_rendered_whole(
    client: TestClient, kept: str, whole: str, who: str
) -> None:
    if who == "learner":
        register(client, "ada")
    expected = client.get(whole)
    first, again = client.get(kept), client.get(kept)
    assert first.status_code == expected.status_code == 200
    assert _tokenless(first.text) == _tokenless(expected.text)  # the block rendered and kept
    assert _tokenless(again.text) == _tokenless(expected.text)  # the whole page kept
    assert PAGES.hits >= 1


def _tokenless(page: str) -> str:
    """The page with its CSRF token (masked afresh for every page, app/security.py) as TOKEN;
    one page carries one token, in <body>'s htmx headers and in every form."""
    token = HEADER_TOKEN.search(page)[1]
    assert set(TOKEN.findall(page)) <= {token}
    return page.replace(token, "TOKEN")


def test_a_second_view_is_served_from_the_kept_page(client: TestClient) -> None:
    client.get(CARD)
    kept = (KEPT.misses, KEPT.hits)
    misses, hits = PAGES.misses, PAGES.hits
    client.get(CARD)
    assert (PAGES.misses, PAGES.hits) == (misses, hits + 1)
    assert (KEPT.misses, KEPT.hits) == kept  # the whole page: the main block is not asked


def test_a_whole_page_is_kept_for_each_header_it_is_shown_with(client: TestClient) -> None:
    visitor = client.get(CARD).text
    stepped = client.get(CARD + "?step=1").text  # the language switch repeats the query
    assert "step=1" in stepped and "step=1" not in visitor
    register(client, "zyxada")
    misses = PAGES.misses
    ada = client.get(CARD).text
    assert PAGES.misses == misses + 1  # her name in the header: a page of her own
    assert '<span class="who">zyxada</span>' in ada and "zyxada" not in visitor
    log_out(client)
    assert '<span class="who">' not in client.get(CARD).text


def test_another_language_is_another_block(client: TestClient) -> None:
    english = client.get(CARD).text
    misses = KEPT.misses
    chinese = client.get(CARD + "?lang=zh").text
    assert KEPT.misses == misses + 1
    assert "Check yourself" in english and "Check yourself" not in chinese
    assert 'lang="zh-CN"' in chinese and chinese != english


def test_other_inputs_are_another_result_and_the_same_inputs_in_any_order_are_one(
    client: TestClient,
) -> None:
    fragment = "/calculators/training-memory/result"
    dp4 = client.get(f"{fragment}?preset=llama3-70b&dp=4&tp=8")
    misses = KEPT.misses
    reordered = client.get(f"{fragment}?tp=8&dp=4&preset=llama3-70b")
    assert KEPT.misses == misses and reordered.text == dp4.text
    # The address bar points at the inputs on a kept fragment as on a fresh one.
    assert reordered.headers["HX-Replace-Url"] == dp4.headers["HX-Replace-Url"]
    assert "dp=4" in dp4.headers["HX-Replace-Url"]
    dp8 = client.get(f"{fragment}?preset=llama3-70b&dp=8&tp=8")
    assert KEPT.misses == misses + 1 and dp8.text != dp4.text
    assert "dp=8" in dp8.headers["HX-Replace-Url"]


def test_bad_inputs_stay_a_422_when_kept(client: TestClient) -> None:
    for _ in range(2):
        page = client.get("/calculators/training-memory?dp=0")
        fragment = client.get("/calculators/training-memory/result?dp=0")
        assert page.status_code == fragment.status_code == 422
        assert 'class="errors"' in fragment.text and "HX-Replace-Url" not in fragment.headers


def _signed_in_page(client: TestClient, url: str) -> tuple[str, str]:
    """The page as the signed-in user sees it, and their session's CSRF token."""
    page = client.get(url).text
    tokens = set(TOKEN.findall(page))
    assert len(tokens) == 1, tokens  # the header's forms and the page's carry one token
    return page, tokens.pop()


@pytest.mark.parametrize("url", [CARD, PLANNER, "/cards/map", "/glossary"])
def test_two_learners_never_get_each_others_name_or_token(client: TestClient, url: str) -> None:
    # Names no card or calculator spells, so finding one on a page means it leaked there.
    register(client, "zyxada")
    ada_page, ada_token = _signed_in_page(client, url)
    log_out(client)
    register(client, "zyxbob")
    bob_page, bob_token = _signed_in_page(client, url)
    assert ada_token != bob_token
    assert '<span class="who">zyxada</span>' in ada_page and "zyxbob" not in ada_page
    assert '<span class="who">zyxbob</span>' in bob_page and "zyxada" not in bob_page
    assert ada_token not in bob_page
    # Both were served from one kept block: bob's page is ada's with his name and token.
    assert KEPT.hits >= 1
    assert bob_page.replace(bob_token, ada_token).replace("zyxbob", "zyxada") == ada_page
    log_out(client)
    visitor = client.get(url).text
    assert '<span class="who">' not in visitor and "zyxbob" not in visitor
    assert ada_token not in visitor and bob_token not in visitor


def test_the_check_forms_of_a_kept_card_post_with_the_readers_token(client: TestClient) -> None:
    register(client, "ada")
    client.get(CARD)  # kept now: the page below is served from the kept block
    page, token = _signed_in_page(client, CARD)
    assert page.count(f'value="{token}"') >= 3  # the header's forms and each check's form
    box = re.search(r'<form class="stack answer-form" id="check-.*?</form>', page, re.S)[0]
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', box))
    assert hidden["csrf_token"] == token
    del client.headers["X-CSRF-Token"]  # as a plain form posts: the hidden field alone
    answer = client.post(f"{CARD}/check", data={**hidden, "option": "0", "answer": "1"})
    assert answer.status_code == 200, answer.text


def test_content_loaded_anew_is_rendered_anew(client: TestClient) -> None:
    assert "这张卡片的中文版还没有写好" not in client.get(CARD + "?lang=zh").text
    first = client.get(CARD + "?lang=en").text
    # Another library (as a new app loads), here without the Chinese editions: nothing kept
    # from the first one is served.
    library = client.app.state.cards
    client.app.state.cards = type(library)(library.all(), [])
    assert "这张卡片的中文版还没有写好" in client.get(CARD + "?lang=zh").text
    # The English page, rendered anew, has no link to a Chinese edition any more.
    assert 'class="edition-switch"' in first
    assert 'class="edition-switch"' not in client.get(CARD + "?lang=en").text


def test_a_full_cache_drops_the_least_recently_used() -> None:
    cache: LruCache[str] = LruCache(max_entries=2, max_size=100, size_of=len)
    assert cache.get_or_make("a", lambda: "A") == "A"
    assert cache.get_or_make("b", lambda: "B") == "B"
    assert cache.get_or_make("a", lambda: "not made again") == "A"  # a hit, and now recent
    cache.get_or_make("c", lambda: "C")  # a third entry drops b, the least recently used
    assert cache.get_or_make("b", lambda: "B again") == "B again"
    assert (cache.hits, cache.misses, len(cache)) == (1, 4, 2)


def test_a_cache_bounded_by_size_keeps_under_it() -> None:
    cache: LruCache[str] = LruCache(max_entries=100, max_size=10, size_of=len)
    cache.get_or_make(1, lambda: "x" * 6)
    cache.get_or_make(2, lambda: "y" * 6)  # 12 > 10: the first goes
    assert len(cache) == 1 and cache.get_or_make(1, lambda: "new") == "new"
    assert cache.get_or_make(3, lambda: "z" * 11) == "z" * 11  # larger than all: not kept
    assert cache.get_or_make(3, lambda: "made again") == "made again"


# Names base.html reads for the header, which differ from one user to another: a kept block
# must read none of them (the CSRF token, which it does read, is put in afresh).
PER_USER = {"user", "path", "switch_query", "nav"}
KEPT_TEMPLATES = ["cards/card.html", "cards/index.html", "cards/map.html", "cards/cheatsheet.html",
                  "cards/search.html", "cards/glossary.html", "index.html",
                  "calculators/index.html"]  # fmt: skip


def _names_read(node: nodes.Node, seen: set[str]) -> set[str]:
    """The names `node` reads, with those of every template it includes or imports."""
    found = {n.name for n in node.find_all(nodes.Name) if n.ctx == "load"}
    for use in node.find_all((nodes.Include, nodes.Import, nodes.FromImport)):
        name = use.template.value if isinstance(use.template, nodes.Const) else None
        if name and name not in seen:
            seen.add(name)
            found |= _names_read(templates.env.parse(_source(name)), seen)
    return found


def _source(name: str) -> str:
    return templates.env.loader.get_source(templates.env, name)[0]


def _calculator_templates() -> list[str]:
    folder = Path(templates.env.loader.searchpath[0]) / "calculators"
    results = sorted(f"calculators/{p.name}" for p in folder.glob("_*_result.html"))
    pages = [f"calculators/{p.name[1:].removesuffix('_result.html')}.html" for p in
             folder.glob("_*_result.html")]  # fmt: skip
    return results + sorted(pages)


@pytest.mark.parametrize("name", KEPT_TEMPLATES + _calculator_templates())
def test_a_kept_block_reads_nothing_of_the_user(name: str) -> None:
    tree = templates.env.parse(_source(name))
    main = next((b for b in tree.find_all(nodes.Block) if b.name == "main"), tree)
    assert not _names_read(main, set()) & PER_USER
