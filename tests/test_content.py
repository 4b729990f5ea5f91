"""The content folder loaded once per set of files (app/content.py), and YAML read by the C
parser as the safe pure-Python one reads it (app/yaml_text.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from app.cards.router import CALCULATOR_PAGES, DEMO_PAGES
from app.config import ROOT_DIR
from app.content import load_content
from app.yaml_text import load_yaml
from tests.quiz.conftest import FIXTURE_CONTENT

PAGES = (tuple(CALCULATOR_PAGES), tuple(DEMO_PAGES))


def test_unchanged_files_give_the_same_content_and_a_changed_file_new_content(
    tmp_path: Path,
) -> None:
    content = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, content)
    first = load_content(content, *PAGES)
    assert load_content(content, *PAGES) is first
    quiz_file = next((content / "quiz").glob("*.yaml"))
    quiz_file.write_text(quiz_file.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    changed = load_content(content, *PAGES)
    assert changed is not first and changed.quiz is not first.quiz
    assert [i.id for i in changed.quiz.all()] == [i.id for i in first.quiz.all()]


def test_a_file_with_the_same_size_but_a_new_time_is_read_again(tmp_path: Path) -> None:
    content = tmp_path / "content"
    shutil.copytree(FIXTURE_CONTENT, content)
    first = load_content(content, *PAGES)
    card = next((content / "cards").glob("*.md"))
    stat = card.stat()
    os.utime(card, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert load_content(content, *PAGES) is not first


def test_an_app_over_the_same_content_shares_it(client) -> None:  # noqa: ANN001
    settings = client.app.state.settings
    assert load_content(settings.content_dir, *PAGES).quiz is client.app.state.quiz


YAML_FILES = sorted((ROOT_DIR / "content").rglob("*.yaml"))


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(ROOT_DIR)))
def test_the_fast_parser_reads_every_content_file_as_the_safe_parser_does(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert load_yaml(text) == yaml.safe_load(text)


def test_the_fast_parser_is_as_safe() -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml("!!python/object/apply:os.system ['true']")
    assert load_yaml("a: [1, 2.5, 'x', null, 2026-11-29]") == yaml.safe_load(
        "a: [1, 2.5, 'x', null, 2026-11-29]"
    )
