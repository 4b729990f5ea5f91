"""Build build/static/: each file under static/ at its fingerprinted path, with gzip and brotli.

The paths come from the one manifest in app/static_files.py; ServeStatic serves the built
copies and picks .br or .gz by the request's Accept-Encoding. The output is reproducible
(gzip without a timestamp, brotli at its default quality 11), so a rebuild writes the same
bytes. A copy already built is kept: its name is its hash. Copies of files no longer in
static/ are removed. scripts/serve runs this before starting, and the Dockerfile in the image.

    .venv/bin/python -m scripts.build_static
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from servestatic.compress import Compressor

from app.static_files import BUILD_DIR, MANIFEST, STATIC_DIR

COMPRESSED_SUFFIXES = (".gz", ".br")


def _build_one(source_file: Path, target: Path, compressor: Compressor) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Staged beside the target, then renamed: a server starting meanwhile never sees half a
    # file. Siblings first, the file last: once the file exists, its siblings do too.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as staging:
        staged = Path(staging) / target.name
        shutil.copy2(source_file, staged)
        if compressor.should_compress(staged.name):  # not woff2 or images: already compressed
            compressor.compress(staged)  # writes .br/.gz only where they are smaller
        for suffix in COMPRESSED_SUFFIXES:
            sibling = staged.with_name(staged.name + suffix)
            if sibling.exists():
                os.replace(sibling, target.with_name(target.name + suffix))
        os.replace(staged, target)


def _remove_stale(dest: Path, manifest: dict[str, str]) -> None:
    wanted = {
        hashed + suffix for hashed in manifest.values() for suffix in ("", *COMPRESSED_SUFFIXES)
    }
    for path in sorted(dest.rglob("*"), reverse=True):  # files before the folders they are in
        rel = path.relative_to(dest).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif rel not in wanted:
            path.unlink()


def build(
    source: Path = STATIC_DIR, dest: Path = BUILD_DIR, manifest: dict[str, str] = MANIFEST
) -> list[str]:
    """Build the missing fingerprinted copies under `dest`; returns their paths."""
    dest.mkdir(parents=True, exist_ok=True)
    # zstd siblings need Python 3.14's compression.zstd; browsers that take zstd take br.
    compressor = Compressor(use_zstd=False, quiet=True)
    built = []
    for rel, hashed in manifest.items():
        target = dest / hashed
        if not target.is_file():
            _build_one(source / rel, target, compressor)
            built.append(hashed)
    _remove_stale(dest, manifest)
    return built


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    started = time.monotonic()
    missing = sum(not (BUILD_DIR / hashed).is_file() for hashed in MANIFEST.values())
    if missing:
        print(f"Building {missing} static files into {BUILD_DIR} (brotli: a while)…", flush=True)
    built = build()
    took_s = time.monotonic() - started
    kept = len(MANIFEST) - len(built)
    print(f"Static files: {len(built)} built, {kept} up to date ({took_s:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
