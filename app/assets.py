"""URLs of the vendored front-end files (static/vendor/<package>-<version>/).

The version is read from the folder name, so an upgrade by scripts/vendor_assets.py
needs no template change. The URLs are the fingerprinted ones (app/static_files.py).
"""

from __future__ import annotations

from app.static_files import STATIC_DIR, static_url

VENDOR_DIR = STATIC_DIR / "vendor"


def vendor_url(package: str, file: str) -> str:
    folders = sorted(VENDOR_DIR.glob(f"{package}-[0-9]*"))
    if len(folders) != 1:
        raise RuntimeError(
            f"expected one vendored {package} in {VENDOR_DIR}, found {len(folders)}: "
            "run scripts/vendor_assets.py"
        )
    return static_url(f"vendor/{folders[0].name}/{file}")


VENDOR = {
    "htmx": vendor_url("htmx.org", "htmx.min.js"),
    "htmx_sse": vendor_url("htmx.org", "ext/hx-sse.min.js"),
    "katex_js": vendor_url("katex", "katex.min.js"),
    "katex_css": vendor_url("katex", "katex.min.css"),
    "mermaid": vendor_url("mermaid", "mermaid.min.js"),
    "uplot_js": vendor_url("uplot", "uPlot.iife.min.js"),
    "uplot_css": vendor_url("uplot", "uPlot.min.css"),
}
