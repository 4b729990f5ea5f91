"""The vendored front-end files match SHA256SUMS and include everything templates load."""

import shutil
from pathlib import Path

import pytest

from scripts.vendor_assets import VENDOR_DIR, check

EXPECTED_FILES = [
    "htmx.org-4.0.1/htmx.min.js",
    "htmx.org-4.0.1/ext/hx-sse.min.js",
    "katex-0.19.1/katex.min.js",
    "katex-0.19.1/katex.min.css",
    "mermaid-12.3.0/mermaid.min.js",
    "uplot-1.6.32/uPlot.iife.min.js",
    "uplot-1.6.32/uPlot.min.css",
]


def test_vendored_files_match_their_sums() -> None:
    assert check(VENDOR_DIR) == []


@pytest.mark.parametrize("rel_path", EXPECTED_FILES)
def test_asset_a_template_may_load_exists(rel_path: str) -> None:
    assert (VENDOR_DIR / rel_path).is_file()


def test_katex_fonts_sit_next_to_its_css() -> None:
    # katex.min.css refers to url(fonts/KaTeX_*.woff2), relative to the css file
    css = (VENDOR_DIR / "katex-0.19.1/katex.min.css").read_text()
    assert "url(fonts/KaTeX_Main-Regular.woff2)" in css
    assert (VENDOR_DIR / "katex-0.19.1/fonts/KaTeX_Main-Regular.woff2").is_file()


def test_check_reports_a_tampered_file(tmp_path: Path) -> None:
    vendor_copy = tmp_path / "vendor"
    shutil.copytree(VENDOR_DIR, vendor_copy)
    tampered = vendor_copy / "htmx.org-4.0.1/htmx.min.js"
    data = bytearray(tampered.read_bytes())
    data[100] ^= 0x01
    tampered.write_bytes(bytes(data))

    assert check(vendor_copy) == ["htmx.org-4.0.1/htmx.min.js: SHA-256 differs from SHA256SUMS"]


def test_check_reports_an_unlisted_file(tmp_path: Path) -> None:
    vendor_copy = tmp_path / "vendor"
    shutil.copytree(VENDOR_DIR, vendor_copy)
    (vendor_copy / "htmx.org-4.0.1/ext/hx-ws.min.js").write_text("/* not vendored */")

    assert check(vendor_copy) == [
        "htmx.org-4.0.1/ext/hx-ws.min.js: present but not listed in SHA256SUMS"
    ]
