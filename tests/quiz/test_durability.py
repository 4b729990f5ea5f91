"""SIGKILL while answers stream in: after a restart every acknowledged answer is there."""

from __future__ import annotations

from pathlib import Path

from bench.quiz_durability import run


def test_no_acknowledged_answer_is_lost_to_sigkill(tmp_path: Path) -> None:
    result = run(answers=100, data_dir=tmp_path / "data", kill_after=50)
    assert result.acknowledged >= 50  # the kill came mid-stream ...
    assert result.acknowledged < result.submitted  # ... before the stream ended
    assert result.lost == []
    # An answer in flight at the kill may be kept without having been acknowledged.
    assert result.acknowledged <= result.kept <= result.acknowledged + 1
