"""What only a GPU can show: NCCL's own record of a collective, with its duration.

Skipped on a machine without CUDA and NCCL (CI has none). On a GPU box:
`.venv/bin/python -m pytest -q -m gpu tests/demos/test_gpu.py`. Each check runs in a child
process of one NCCL rank, so the test process never holds a CUDA context or a process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not (torch.cuda.is_available() and dist.is_nccl_available()),
        reason="needs a CUDA GPU and NCCL",
    ),
]

ONE_RANK_ALL_REDUCE = """
import json, os, socket
import torch, torch.distributed as dist
from demos import flight_recorder

flight_recorder.enable()
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
device = torch.device("cuda", 0)
torch.cuda.set_device(device)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
buffer = torch.ones(1 << 20, device=device)  # 4 MiB of float32
dist.all_reduce(buffer)  # NCCL's communicator is made lazily: not in the window
torch.cuda.synchronize()
with flight_recorder.Window() as window:
    dist.all_reduce(buffer)
    torch.cuda.synchronize()
[[record]] = flight_recorder.read([window], "nccl", timed=flight_recorder.timed("nccl"))
print(json.dumps({**record.as_dict(), "retired": record.retired}))
dist.destroy_process_group()
"""


def test_nccl_records_each_collective_with_its_duration() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", ONE_RANK_ALL_REDUCE],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert (record["backend"], record["kind"], record["group_size"]) == ("nccl", "all_reduce", 1)
    assert record["input_bytes"] == record["output_bytes"] == 4 * 2**20
    # the CUDA events' time of the kernel: positive, and far below a second for 4 MiB
    assert record["duration_s"] is not None and 0 < record["duration_s"] < 1
