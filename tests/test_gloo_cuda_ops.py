"""bench/gloo_cuda_ops.py on CPU tensors: its real gloo pairs, its table, its failure rows.

On CUDA it checks demos/specs/devices.py's table (bench/gpu_session.sh runs it there); here
every collective must run and come back right, and a call a rank refuses must come back as a
row with the error, not as a hang or a crash of the script.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.gloo_cuda_ops import try_kind
from demos.specs.devices import GLOO_ON_CUDA

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.demo
def test_every_collective_runs_and_comes_back_right_on_cpu_tensors(tmp_path: Path) -> None:
    report_path = tmp_path / "ops.json"
    command = [sys.executable, "bench/gloo_cuda_ops.py", "--device", "cpu"]
    done = subprocess.run(
        [*command, "--json", str(report_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = json.loads(report_path.read_text())["rows"]
    assert sorted(row["kind"] for row in rows) == sorted(GLOO_ON_CUDA)
    assert all(row["ran"] and row["correct"] and not row["error"] for row in rows)
    assert "the table in demos/specs/devices.py and this run agree" in done.stdout


@pytest.mark.demo
def test_a_call_both_ranks_refuse_is_a_row_with_the_error() -> None:
    row = try_kind("no_such_collective", "cpu")

    assert row == {
        "kind": "no_such_collective",
        "ran": False,
        "correct": False,
        "error": "ValueError: no call for no_such_collective",
    }
