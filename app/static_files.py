"""Static files: one manifest of fingerprinted URLs, served by ServeStatic.

Every file under static/ has a URL with a hash of its content in it, so a browser may keep it
for a year without asking again: a changed file gets a new URL. Templates ask for URLs with
`{{ static_url("css/app.css") }}` (registered in app/templating.py).

- Our own files are fingerprinted one by one: css/app.css is served at css/app.<hash>.css.
- A vendored package (static/vendor/<pkg>-<version>/) is fingerprinted as one folder:
  vendor/katex-0.19.1/katex.min.css is served at vendor/katex-0.19.1.<hash>/katex.min.css,
  the hash covering every file in the folder. katex.min.css loads url(fonts/KaTeX_*.woff2)
  relative to itself, so its fonts must sit beside it under the same hashed folder; hashing the
  folder keeps those relative URLs working without rewriting third-party CSS.

scripts/build_static.py copies each file to its fingerprinted path under build/static/ with
gzip and brotli siblings. Where a built copy is missing (a fresh clone, a test app) the file is
served from static/ at the same URLs, compressed on the way out like a page (app/main.py). The
unhashed paths (/static/css/app.css: old links, bench/load.py) are served too, cached briefly.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from servestatic import ServeStaticASGI
from servestatic.responders import StaticFile
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from app.config import ROOT_DIR

STATIC_DIR = ROOT_DIR / "static"
BUILD_DIR = ROOT_DIR / "build" / "static"  # git-ignored; scripts/build_static.py writes it
URL_PREFIX = "/static/"
VENDOR = "vendor"
HASH_CHARS = 12  # 48 bits: a cache key among a few hundred files, not a security digest
# Unhashed paths may change with a deploy, so a browser keeps them only briefly.
UNHASHED_MAX_AGE_S = 300


def _file_digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _package_folder(rel: Path) -> Path | None:
    """vendor/<pkg>-<version>/ for a file inside a vendored package, else None."""
    if len(rel.parts) > 2 and rel.parts[0] == VENDOR:
        return Path(*rel.parts[:2])
    return None


def fingerprint(source: Path) -> dict[str, str]:
    """The manifest: each file's path under `source` -> its fingerprinted path (POSIX)."""
    digests = {
        path.relative_to(source): _file_digest(path)
        for path in sorted(source.rglob("*"))
        if path.is_file()
    }
    package_lines: dict[Path, list[str]] = defaultdict(list)
    for rel, digest in digests.items():  # sorted, so a folder's hash is reproducible
        folder = _package_folder(rel)
        if folder is not None:
            package_lines[folder].append(f"{rel.relative_to(folder).as_posix()}\0{digest}\n")
    package_tags = {
        folder: hashlib.sha256("".join(lines).encode()).hexdigest()[:HASH_CHARS]
        for folder, lines in package_lines.items()
    }
    manifest = {}
    for rel, digest in digests.items():
        folder = _package_folder(rel)
        if folder is None:
            hashed = rel.with_name(f"{rel.stem}.{digest[:HASH_CHARS]}{rel.suffix}")
        else:
            tagged = folder.with_name(f"{folder.name}.{package_tags[folder]}")
            hashed = tagged / rel.relative_to(folder)
        manifest[rel.as_posix()] = hashed.as_posix()
    return manifest


MANIFEST = fingerprint(STATIC_DIR)


def static_url(path: str) -> str:
    """The fingerprinted URL of static/<path>, e.g. static_url("css/app.css")."""
    try:
        return URL_PREFIX + MANIFEST[path]
    except KeyError:
        raise LookupError(f"no file {path!r} under {STATIC_DIR}") from None


class _StaticFiles(ServeStaticASGI):
    """ServeStatic's file table, negotiation and headers, with the body read in one go.

    ServeStatic's own ASGI sender, on a server without the pathsend extension (uvicorn has
    none), reads each file through a thread pool it makes per request, 8 KB at a time. On
    bench/load.py's static CSS that served 193 req/s, Starlette's StaticFiles 402 and this
    sender 1,763. Our files sit in the page cache, so reading one in the event loop costs less
    than a thread hop; the largest, mermaid's 5.3 MB (1.2 MB as brotli), takes under 1 ms."""

    # A year, the usual ceiling for "forever" (ServeStatic's default is ten).
    FOREVER = 365 * 24 * 60 * 60

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        static_file = self.files.get(scope["path"]) if scope["type"] == "http" else None
        if not isinstance(static_file, StaticFile):
            await self.application(scope, receive, send)
            return
        # ServeStatic reads request headers in WSGI's spelling (HTTP_ACCEPT_ENCODING).
        request_headers = {
            "HTTP_" + name.decode("latin-1").upper().replace("-", "_"): value.decode("latin-1")
            for name, value in scope["headers"]
        }
        # Also answers 304 (If-None-Match), 206 (Range), HEAD and 405 for other methods.
        response = static_file.get_response(scope["method"], request_headers)
        headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in response.headers
            if value is not None
        ]
        await send(
            {"type": "http.response.start", "status": int(response.status), "headers": headers}
        )
        body = b""
        if response.file is not None:
            with response.file as file:
                body = file.read()
        await send({"type": "http.response.body", "body": body})


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    # Raised, not answered: the app's own 404 page and headers apply, as with StaticFiles.
    raise HTTPException(status_code=404)


def static_app(
    manifest: Mapping[str, str] | None = None, source: Path | None = None, build: Path | None = None
) -> ServeStaticASGI:
    """The ASGI app to mount at /static: fingerprinted URLs immutable, unhashed ones short.

    Each URL serves the built copy (with its .gz/.br siblings, chosen by Accept-Encoding) when
    it exists, else the source file. Built copies are named by their hash, so a leftover one
    from an older build is never served for a changed file. The defaults, MANIFEST,
    STATIC_DIR and BUILD_DIR, are read when it is called."""
    manifest = MANIFEST if manifest is None else manifest
    source = STATIC_DIR if source is None else source
    build = BUILD_DIR if build is None else build
    immutable_urls = {URL_PREFIX + hashed for hashed in manifest.values()}
    files = _StaticFiles(
        _not_found,
        max_age=UNHASHED_MAX_AGE_S,
        allow_all_origins=False,  # same-origin pages only; nothing else needs CORS
        immutable_file_test=lambda path, url: url in immutable_urls,
    )
    for rel, hashed in manifest.items():
        built = build / hashed
        path = str(built if built.is_file() else source / rel)
        files.add_file_to_dictionary(URL_PREFIX + hashed, path)
        files.add_file_to_dictionary(URL_PREFIX + rel, path)
    return files
