"""A card page in a real browser loads its files from fingerprinted URLs only, and KaTeX's
fonts, which its CSS names relative to itself, resolve under the same hashed folder."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Response, expect

from app.static_files import MANIFEST, static_url

pytestmark = pytest.mark.browser


def test_a_card_page_loads_fingerprinted_files_and_katex_fonts(page: Page) -> None:
    responses: list[Response] = []
    page.on("response", lambda response: responses.append(response))
    page.goto("/cards/zero-stages")
    expect(page.locator("#card .katex").first).to_be_visible()
    expect(page.locator("#card pre.mermaid svg").first).to_be_visible(timeout=15_000)
    # The faces KaTeX's CSS declares: those the math uses are loaded, none failed.
    faces = page.evaluate("document.fonts.ready.then(fs => [...fs].map(f => [f.family, f.status]))")
    assert ["KaTeX_Main", "loaded"] in faces, faces
    assert not [face for face in faces if face[1] == "error"], faces

    static = {r.url.split("/static/", 1)[1]: r for r in responses if "/static/" in r.url}
    assert set(static) <= set(MANIFEST.values()), set(static) - set(MANIFEST.values())
    assert all(r.status == 200 for r in static.values()), {u: r.status for u, r in static.items()}
    assert static_url("css/app.css").removeprefix("/static/") in static
    fonts = [url for url in static if url.endswith(".woff2")]
    assert fonts and all(url.startswith("vendor/katex-0.19.1.") for url in fonts)
    assert "immutable" in static[fonts[0]].headers["cache-control"]
