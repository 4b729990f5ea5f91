"""Static files (app/static_files.py, scripts/build_static.py) and compressed responses.

Fingerprinted URLs from one manifest, kept a year; the old unhashed paths kept briefly; brotli
and gzip built ahead and sent as built; pages, fragments and JSON compressed on the way out,
small answers and demo streams (text/event-stream) left as they are.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urljoin

import brotli
import httpx
import pytest
from fastapi.testclient import TestClient

from app import static_files
from app.assets import VENDOR
from app.live.worker_process import LocalWorker
from app.main import create_app
from app.static_files import MANIFEST, STATIC_DIR, fingerprint, static_url
from scripts.build_static import build
from tests.utils import make_settings

IMMUTABLE = {"public", "max-age=31536000", "immutable"}
SHORT = {"public", "max-age=300"}
KATEX = "vendor/katex-0.19.1/"
# Built for the tests that need precompressed files: small, and KaTeX for its folder.
BUILT = ("css/app.css", "js/rich.js", "favicon.svg")
PAGES = ("/", "/cards/zero-stages", "/calculators/training-memory", "/demos/all-reduce", "/login")


def _cache_directives(response: httpx.Response) -> set[str]:
    return {d.strip() for d in response.headers["cache-control"].split(",")}


def _raw(client: TestClient, url: str, accept_encoding: str) -> tuple[httpx.Response, bytes]:
    """The response and its body as sent, before any decoding."""
    with client.stream("GET", url, headers={"Accept-Encoding": accept_encoding}) as response:
        return response, b"".join(response.iter_raw())


# Module-wide: these tests only read, and an app takes seconds to start on two cores.
@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("app") / "data"))) as client:
        yield client


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A build of part of the real manifest, which create_app then serves from."""
    part = {
        rel: hashed for rel, hashed in MANIFEST.items() if rel in BUILT or rel.startswith(KATEX)
    }
    build_dir = tmp_path_factory.mktemp("build")
    assert sorted(build(STATIC_DIR, build_dir, part)) == sorted(part.values())
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(static_files, "BUILD_DIR", build_dir)
        yield build_dir


@pytest.fixture(scope="module")
def built_client(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = make_settings(tmp_path_factory.mktemp("built") / "data")
    with TestClient(create_app(settings)) as client:
        yield client


def test_every_file_is_served_at_its_fingerprinted_url_for_a_year(client: TestClient) -> None:
    for rel, hashed in MANIFEST.items():
        source = (STATIC_DIR / rel).read_bytes()
        if not rel.startswith("vendor/"):  # a vendored package's folder carries the hash
            assert f".{hashlib.sha256(source).hexdigest()[:12]}." in hashed
        response = client.get(static_url(rel), headers={"Accept-Encoding": "identity"})
        assert response.status_code == 200, rel
        assert _cache_directives(response) == IMMUTABLE, rel
        assert response.content == source, rel


def test_a_change_gives_a_file_a_new_url_and_a_font_its_package_one(tmp_path: Path) -> None:
    (tmp_path / "css").mkdir()
    (tmp_path / "css/app.css").write_text("body{}")
    package = tmp_path / "vendor/katex-1.0"
    (package / "fonts").mkdir(parents=True)
    (package / "katex.min.css").write_text("@font-face{src:url(fonts/Main.woff2)}")
    (package / "fonts/Main.woff2").write_bytes(b"font v1")
    before = fingerprint(tmp_path)
    assert before["css/app.css"] == f"css/app.{hashlib.sha256(b'body{}').hexdigest()[:12]}.css"
    folder = before["vendor/katex-1.0/katex.min.css"].removesuffix("/katex.min.css")
    assert re.fullmatch(r"vendor/katex-1\.0\.[0-9a-f]{12}", folder)
    assert before["vendor/katex-1.0/fonts/Main.woff2"] == f"{folder}/fonts/Main.woff2"

    (package / "fonts/Main.woff2").write_bytes(b"font v2")  # the CSS itself is unchanged
    after = fingerprint(tmp_path)
    assert after["css/app.css"] == before["css/app.css"]
    assert after["vendor/katex-1.0/katex.min.css"] != before["vendor/katex-1.0/katex.min.css"]


def test_pages_load_only_fingerprinted_urls_that_resolve(client: TestClient) -> None:
    fingerprinted = {static_url(rel) for rel in MANIFEST}
    for path in PAGES:
        page = client.get(path)
        assert page.status_code == 200, path
        urls = set(re.findall(r'(?:src|href)="(/static/[^"]*)"', page.text))
        assert static_url("css/app.css") in urls, path
        assert urls <= fingerprinted, (path, urls - fingerprinted)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            assert _cache_directives(response) == IMMUTABLE, url
    # A demo page's own script, which app/live/pages names by its unhashed path.
    assert static_url("js/demo-chart.js") in client.get("/demos/all-reduce").text


def test_katex_fonts_resolve_beside_its_fingerprinted_css(client: TestClient) -> None:
    css_url = VENDOR["katex_css"]
    fonts = re.findall(r"url\((fonts/[^)]+\.woff2)\)", client.get(css_url).text)
    assert len(set(fonts)) == len(list((STATIC_DIR / KATEX / "fonts").glob("*.woff2"))) == 20
    for font in set(fonts):
        response = client.get(urljoin(css_url, font))
        assert response.status_code == 200, font
        assert _cache_directives(response) == IMMUTABLE, font
        assert response.content == (STATIC_DIR / KATEX / font).read_bytes(), font


@pytest.mark.parametrize(
    ("encoding", "suffix", "decompress"),
    [("br", ".br", brotli.decompress), ("gzip", ".gz", gzip.decompress)],
)
def test_the_precompressed_file_is_sent_as_built(
    built_client: TestClient,
    built: Path,
    encoding: str,
    suffix: str,
    decompress: Callable[[bytes], bytes],
) -> None:
    for rel in ("css/app.css", KATEX + "katex.min.js"):
        response, body = _raw(built_client, static_url(rel), f"{encoding}, identity;q=0.5")
        assert response.headers["content-encoding"] == encoding
        assert "Accept-Encoding" in response.headers["vary"]
        assert body == (built / (MANIFEST[rel] + suffix)).read_bytes()  # not compressed again
        assert int(response.headers["content-length"]) == len(body)
        assert decompress(body) == (STATIC_DIR / rel).read_bytes()


def test_without_an_accepted_encoding_the_file_is_sent_plain(built_client: TestClient) -> None:
    response, body = _raw(built_client, static_url("css/app.css"), "identity")
    assert "content-encoding" not in response.headers
    assert body == (STATIC_DIR / "css/app.css").read_bytes()


def test_fonts_are_not_compressed_again(built: Path) -> None:
    fonts = list(built.glob("vendor/katex-0.19.1.*/fonts/*"))
    assert len(fonts) == 20 and all(font.suffix == ".woff2" for font in fonts)


def test_the_build_is_reproducible_and_builds_only_what_changed(tmp_path: Path) -> None:
    source = tmp_path / "static"
    (source / "css").mkdir(parents=True)
    shutil.copy(STATIC_DIR / "css/app.css", source / "css/app.css")
    shutil.copy(STATIC_DIR / "favicon.svg", source / "favicon.svg")
    first, second = tmp_path / "first", tmp_path / "second"
    manifest = fingerprint(source)
    build(source, first, manifest)
    build(source, second, manifest)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert len(files) == 6  # each file with its .br and .gz
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    assert build(source, first, manifest) == []

    (source / "css/app.css").write_text("body { color: black }\n" * 100)
    changed = fingerprint(source)
    assert build(source, first, changed) == [changed["css/app.css"]]
    assert not (first / manifest["css/app.css"]).exists()  # the old copy is gone
    assert not (first / (manifest["css/app.css"] + ".br")).exists()
    assert (first / (changed["css/app.css"] + ".br")).is_file()


def test_old_unhashed_paths_are_served_with_a_short_cache(client: TestClient) -> None:
    for rel in ("css/app.css", "favicon.svg", KATEX + "katex.min.css"):
        response = client.get(f"/static/{rel}")
        assert response.status_code == 200, rel
        assert _cache_directives(response) == SHORT, rel
        assert response.content == (STATIC_DIR / rel).read_bytes(), rel


def test_an_unknown_or_outdated_fingerprint_is_not_found(client: TestClient) -> None:
    assert client.get("/static/css/app.000000000000.css").status_code == 404
    assert client.get("/static/no-such-file.css").status_code == 404


def test_a_revalidation_with_the_etag_is_answered_304(client: TestClient) -> None:
    first = client.get("/static/css/app.css")
    again = client.get("/static/css/app.css", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip"])
def test_pages_fragments_and_json_are_compressed(client: TestClient, encoding: str) -> None:
    for url in (
        "/cards/zero-stages",
        "/calculators/memory/result?params_b=70&dp_degree=64",
        "/api/calc/memory?params=7.5e9&dp_degree=64",
    ):
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200, url
        assert len(plain.content) >= 1024, url
        response = client.get(url, headers={"Accept-Encoding": encoding})
        assert response.headers["content-encoding"] == encoding, url
        assert "Accept-Encoding" in response.headers["vary"], url
        # httpx decodes it; each page masks its CSRF token anew (app/security.py)
        assert _unmasked(response.content) == _unmasked(plain.content), url


def _unmasked(page: bytes) -> bytes:
    return re.sub(rb'(X-CSRF-Token": "|name="csrf_token" value=")[\w=-]+', rb"\1TOKEN", page)


def test_a_small_answer_is_sent_uncompressed(client: TestClient) -> None:
    response, body = _raw(client, "/healthz", "br, gzip")
    assert len(body) < 1024
    assert "content-encoding" not in response.headers
    assert json.loads(body)["database"] == "ok"


@pytest.mark.demo
def test_a_demo_stream_is_sent_uncompressed_event_by_event(
    tmp_path: Path, demo_worker: tuple[LocalWorker, str, str]
) -> None:
    _, address, token = demo_worker
    settings = make_settings(tmp_path / "data", worker_address=address, worker_token=token)
    with TestClient(create_app(settings)) as client:
        url = "/demos/all-reduce/stream?size_mib=1&iterations=3"
        with client.stream("GET", url, headers={"Accept-Encoding": "zstd, br, gzip"}) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert "content-encoding" not in stream.headers
            chunks = list(stream.iter_raw())
    # Each event is passed on as the app sent it: plain text, one event a chunk, none held
    # back to be sent together (a buffering encoder would give one chunk at the end).
    assert len(chunks) > 5
    assert all(chunk.endswith(b"\n\n") and chunk.count(b"\n\n") == 1 for chunk in chunks)
    assert chunks[0].startswith(b"data: ") and b"Running on 2 ranks" in chunks[0]
    assert chunks[-1] == b'event: done\ndata: "done"\n\n'
