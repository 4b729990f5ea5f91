"""Copy pinned front-end files from node_modules/ into static/vendor/, or check them.

The app serves these files itself, so pages need no CDN at run time. Versions are pinned in
package.json and package-lock.json; each package lands in static/vendor/<pkg>-<version>/ and
every copied file is listed with its SHA-256 in static/vendor/SHA256SUMS.

    npm ci && python scripts/vendor_assets.py     # (re)vendor after a version bump
    python scripts/vendor_assets.py --check       # CI: sums match, no unlisted files
"""

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
VENDOR_DIR = ROOT / "static" / "vendor"
SUMS_NAME = "SHA256SUMS"

# package -> [(glob inside the package, subdir under vendor/<pkg>-<version>/)]
FILES: dict[str, list[tuple[str, str]]] = {
    "htmx.org": [("dist/htmx.min.js", ""), ("dist/ext/hx-sse.min.js", "ext"), ("LICENSE", "")],
    "katex": [
        ("dist/katex.min.js", ""),
        ("dist/katex.min.css", ""),
        # katex.min.css loads url(fonts/KaTeX_*.woff2) relative to itself. Browsers take the
        # woff2 entry first, so the woff/ttf fallbacks (three times the bytes) are left out.
        ("dist/fonts/*.woff2", "fonts"),
        ("LICENSE", ""),
    ],
    "mermaid": [("dist/mermaid.min.js", ""), ("LICENSE", "")],
    "uplot": [("dist/uPlot.iife.min.js", ""), ("dist/uPlot.min.css", ""), ("LICENSE", "")],
}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def vendor(node_modules: Path, vendor_dir: Path) -> list[Path]:
    """Copy FILES into vendor_dir, drop older versions, write SHA256SUMS; return copied paths."""
    copied: list[Path] = []
    for package, patterns in FILES.items():
        package_dir = node_modules / package
        version = json.loads((package_dir / "package.json").read_text())["version"]
        target = vendor_dir / f"{package}-{version}"
        for stale in vendor_dir.glob(f"{package}-*"):
            if stale.is_dir() and stale != target:
                shutil.rmtree(stale)
        if target.exists():
            shutil.rmtree(target)
        for pattern, subdir in patterns:
            sources = sorted(package_dir.glob(pattern))
            if not sources:
                raise FileNotFoundError(f"{package}: nothing matches {pattern!r} in {package_dir}")
            (target / subdir).mkdir(parents=True, exist_ok=True)
            for source in sources:
                copied.append(Path(shutil.copy2(source, target / subdir / source.name)))
    # Sorted by path, so a version bump reads as a plain diff of SHA256SUMS.
    rel_paths = sorted(p.relative_to(vendor_dir).as_posix() for p in copied)
    lines = [f"{sha256_of(vendor_dir / rel_path)}  {rel_path}" for rel_path in rel_paths]
    (vendor_dir / SUMS_NAME).write_text("\n".join(lines) + "\n")
    return copied


def check(vendor_dir: Path) -> list[str]:
    """Return one message per problem in vendor_dir (bad or missing file, unlisted file)."""
    sums_path = vendor_dir / SUMS_NAME
    if not sums_path.is_file():
        return [f"{sums_path} is missing"]
    problems: list[str] = []
    listed: set[str] = set()
    for line in sums_path.read_text().splitlines():
        digest, separator, rel_path = line.partition("  ")
        if not separator:
            problems.append(f"{SUMS_NAME}: malformed line {line!r}")
            continue
        listed.add(rel_path)
        path = vendor_dir / rel_path
        if not path.is_file():
            problems.append(f"{rel_path}: listed in {SUMS_NAME} but missing")
        elif sha256_of(path) != digest:
            problems.append(f"{rel_path}: SHA-256 differs from {SUMS_NAME}")
    for path in sorted(vendor_dir.rglob("*")):
        rel_path = path.relative_to(vendor_dir).as_posix()
        if path.is_file() and rel_path != SUMS_NAME and rel_path not in listed:
            problems.append(f"{rel_path}: present but not listed in {SUMS_NAME}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify static/vendor, copy nothing")
    args = parser.parse_args()
    if args.check:
        problems = check(VENDOR_DIR)
        for problem in problems:
            print(f"vendor check: {problem}", file=sys.stderr)
        if problems:
            print("re-run: npm ci && python scripts/vendor_assets.py", file=sys.stderr)
            return 1
        print(f"vendor check: all files in {SUMS_NAME} match")
        return 0
    copied = vendor(NODE_MODULES, VENDOR_DIR)
    print(f"vendored {len(copied)} files into {VENDOR_DIR.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
