"""bench/gpu_session.sh, the one command a lent GPU machine runs: what it writes fits what such
a machine sends back (at most eight files, plainly named), its steps' limits fit one command's
ten minutes, and on a machine without a GPU it runs through, each CUDA step stopping with its
reason, into those files and no others."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_session.sh"
FILES_BACK = 8  # the device tool: at most 8 files from $OUT
COMMAND_LIMIT_S = 600  # the device tool: one command's run
INSTALL_AND_ENV_S = 40  # installing .whl/ and reading the machine, seconds to spare


def _written() -> set[str]:
    return set(re.findall(r'"\$out/([^"$]+)"', SCRIPT.read_text()))


def test_what_it_writes_fits_what_a_lent_machine_sends_back() -> None:
    written = _written()
    assert {"env.txt", "steps.txt", "gpu-profile.json", "report.md"} <= written
    assert len(written) <= FILES_BACK, sorted(written)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in written), sorted(written)


def test_its_steps_limits_fit_one_command() -> None:
    limits = [int(s) for s in re.findall(r"\bstep [a-z0-9-]+ (\d+) ", SCRIPT.read_text())]
    assert len(limits) == 5
    assert sum(limits) + INSTALL_AND_ENV_S <= COMMAND_LIMIT_S - 10, limits


@pytest.mark.demo
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU here runs the real session")
def test_without_a_gpu_every_cuda_step_stops_with_its_reason(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # This Python has the project installed; a kit in .whl/ is for the lent machine's.
    env = {**os.environ, "PYTHON": sys.executable, "GPU_WHEELS": str(tmp_path / "no-kit")}
    done = subprocess.run(
        ["bash", str(SCRIPT), str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip

    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert {path.name for path in out.iterdir()} == {"env.txt", "steps.txt"}
    env_txt = (out / "env.txt").read_text()
    for name in ("gpu-profile", "nccl-1", "gloo-cuda-2", "gloo-cuda-ops"):
        assert re.search(rf"step {name}: exit 2 in \d+ s", env_txt), env_txt
    assert "gpu-tests: the GPU test did not pass (skipped?)" in env_txt
    steps = (out / "steps.txt").read_text()
    assert "no CUDA device here" in steps  # gpu_profile's own reason
    assert "--device cuda needs a visible GPU" in steps  # the worker's
    assert "needs a CUDA GPU and NCCL" in steps  # the GPU test's skip
