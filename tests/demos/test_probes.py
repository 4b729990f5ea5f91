"""The probes on a real 2-rank gloo group, spawned here: what they count must be exact."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.utils import free_port

WORLD_SIZE = 2
ELEMENTS = 1024  # 4096 B of float32 per rank
BIG_ELEMENTS = 2**20  # 4 MiB


def _probe_rank(rank: int, port: int, out_dir: str) -> None:
    """One rank: issues known collectives under the probes and writes what they recorded."""
    from dataclasses import asdict
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    from demos.collective_calls import all_gather_single, reduce_scatter_single
    from demos.probes import CollectiveCounter, CountedStep, RankInfo, count_then_time

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=timedelta(seconds=30))
    x = torch.full((ELEMENTS,), float(rank + 1))
    counter = CollectiveCounter()
    with counter:
        with counter.phase("reduce_scatter"):
            reduce_scatter_single(torch.empty(ELEMENTS // WORLD_SIZE), x)
        with counter.phase("all_gather"):
            all_gather_single(torch.empty(ELEMENTS * WORLD_SIZE), x)
        with counter.phase("broadcast"):
            dist.broadcast(x, src=0)
        with counter.phase("functional"):
            # torch 2.11 (the lent GPU machines') names them all_gather_tensor and
            # reduce_scatter_tensor; 2.13 renames them (demos/collective_calls.py).
            gather = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor
            scatter = getattr(funcol, "reduce_scatter_single", None) or funcol.reduce_scatter_tensor
            gather(x, 0, dist.group.WORLD).wait()
            scatter(x, "sum", 0, dist.group.WORLD).wait()
        with counter.phase("p2p"):
            if rank == 0:
                dist.send(x, dst=1)
            else:
                dist.recv(x, src=0)
    big = torch.ones(BIG_ELEMENTS)
    dist.barrier()
    with CountedStep() as step:
        dist.all_reduce(big)
    seen_before_timing = len(counter.calls)
    info = RankInfo(rank, WORLD_SIZE, "gloo", torch.device("cpu"))
    counted, timed = count_then_time(lambda: dist.all_reduce(x), info, prepare=lambda: x.fill_(1))
    result: dict[str, Any] = {
        "calls": [asdict(call) for call in counter.calls],
        "by_kind": {phase: counter.by_kind(phase) for phase in ("functional", "p2p")},
        "step": step.as_dict(rank),
        "all_reduce_value": big[0].item(),
        "counter_untouched_by_timing": len(counter.calls) == seen_before_timing,
        "counted_then_timed": {**counted.as_dict(rank), "time_s": timed.time_s},
        "clean_result": x[0].item(),
    }
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    # Rank 0 hosts the store: if it leaves while rank 1 is still tearing its group down,
    # rank 1's gloo threads abort ("terminate called without an active exception"). So
    # rank 1 finishes first and says so in a file, and rank 0 waits for that.
    left = Path(out_dir, "rank1.left")
    if rank == 1:
        dist.destroy_process_group()
        left.write_text("done")
        return
    deadline = time.monotonic() + 60
    while not left.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out_dir = tmp_path_factory.mktemp("probes")
    context = multiprocessing.get_context("spawn")
    port = free_port()
    ranks = [
        context.Process(target=_probe_rank, args=(r, port, str(out_dir))) for r in range(WORLD_SIZE)
    ]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(90)
        if process.is_alive():
            process.kill()
    assert [process.exitcode for process in ranks] == [0, 0]
    return [json.loads((out_dir / f"rank{r}.json").read_text()) for r in range(WORLD_SIZE)]


def _calls(result: dict[str, Any], phase: str) -> list[tuple[str, int, float | None]]:
    return [
        (c["kind"], c["payload_bytes"], c["logical_bytes"])
        for c in result["calls"]
        if c["phase"] == phase
    ]


@pytest.mark.demo
def test_reduce_scatter_payload_is_the_full_input(probed: list[dict[str, Any]]) -> None:
    for result in probed:
        assert _calls(result, "reduce_scatter") == [("reduce_scatter", 4096, 2048.0)]


@pytest.mark.demo
def test_all_gather_payload_is_the_full_output(probed: list[dict[str, Any]]) -> None:
    for result in probed:
        assert _calls(result, "all_gather") == [("all_gather", 8192, 4096.0)]


@pytest.mark.demo
def test_broadcast_is_counted_with_its_payload(probed: list[dict[str, Any]]) -> None:
    for result in probed:
        assert _calls(result, "broadcast") == [("broadcast", 4096, 4096.0)]


@pytest.mark.demo
def test_functional_collectives_follow_the_same_conventions(probed: list[dict]) -> None:
    for result in probed:
        assert result["by_kind"]["functional"] == [
            {"kind": "all_gather", "count": 1, "payload_bytes": 8192, "logical_bytes": 4096.0},
            {"kind": "reduce_scatter", "count": 1, "payload_bytes": 4096, "logical_bytes": 2048.0},
        ]


@pytest.mark.demo
def test_send_and_recv_are_counted_on_their_own_side(probed: list[dict[str, Any]]) -> None:
    assert _calls(probed[0], "p2p") == [("send", 4096, 4096.0)]
    assert _calls(probed[1], "p2p") == [("recv", 4096, 0.0)]


@pytest.mark.demo
def test_wire_bytes_of_a_4_mib_all_reduce_are_4_mib_at_two_ranks(probed: list[dict]) -> None:
    for rank, result in enumerate(probed):
        step = result["step"]
        assert step["rank"] == rank
        assert step["collectives"] == [
            {
                "kind": "all_reduce",
                "count": 1,
                "payload_bytes": 4 * 2**20,
                "logical_bytes": 4.0 * 2**20,
            }
        ]
        assert abs(step["wire_bytes"] - 4 * 2**20) <= 0.01 * 4 * 2**20
        assert "time_s" not in step  # a counted window's time would include the counter
        assert result["all_reduce_value"] == 2.0


@pytest.mark.demo
def test_count_then_time_counts_one_run_and_times_another(probed: list[dict]) -> None:
    for result in probed:
        row = result["counted_then_timed"]
        assert row["collectives"] == [
            {"kind": "all_reduce", "count": 1, "payload_bytes": 4096, "logical_bytes": 4096.0}
        ]
        assert row["time_s"] > 0
        assert result["clean_result"] == 2.0  # the clean run's result: refilled, then summed
        assert result["counter_untouched_by_timing"]


def test_a_timed_window_refuses_to_open_under_a_probe() -> None:
    import torch

    from demos.probes import CollectiveCounter, TimedStep

    with CollectiveCounter() as counter, pytest.raises(RuntimeError, match="time it clean"):
        with TimedStep():
            torch.ones(4).sum()
    assert counter.calls == []
    with TimedStep() as window:
        torch.ones(4).sum()
    assert window.time_s > 0


def test_wire_meter_counts_bytes_written_to_a_file(tmp_path: Path) -> None:
    from demos.probes import WireMeter

    with WireMeter() as meter, (tmp_path / "blob").open("wb", buffering=0) as blob:
        blob.write(b"x" * 100_000)
    assert meter.bytes_ == 100_000


def test_logical_bytes_use_the_ring_formulas() -> None:
    from demos.probes import logical_bytes

    assert logical_bytes("all_reduce", 1000, 4) == 1500.0
    assert logical_bytes("all_to_all", 1000, 4) == 750.0
    assert logical_bytes("barrier", 0, 4) == 0.0
    # c10d's gather_ carries one rank's 1000 B; nccl-tests' S is the gathered 4000 B, and the
    # root receives (N-1)/N of it: the three other pieces. Reduce moves its whole buffer.
    assert logical_bytes("gather", 1000, 4) == 3000.0
    assert logical_bytes("scatter", 1000, 4) == 3000.0
    assert logical_bytes("reduce", 1000, 4) == 1000.0
    assert logical_bytes("unknown_op", 1000, 4) is None


def test_storage_bytes_counts_a_shared_buffer_once() -> None:
    import torch

    from demos.memory_probes import storage_bytes

    buffer = torch.zeros(100)
    views = [buffer[:10], buffer[10:60], buffer[60:]]
    other = torch.zeros(7, dtype=torch.float64)
    assert storage_bytes([*views, other, other]) == 400 + 56


def test_model_state_bytes_of_adam_are_m_v_and_a_step_per_tensor() -> None:
    import torch

    from demos.memory_probes import model_state_bytes

    model = torch.nn.Linear(10, 3)  # 30 + 3 parameters in 2 tensors
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(2, 10)).sum().backward()
    optimizer.step()
    assert model_state_bytes(model, optimizer) == {
        "params": 4 * 33,
        "grads": 4 * 33,
        "optimizer": 8 * 33 + 4 * 2,
    }


def test_saved_activation_meter_counts_distinct_storages_without_parameters() -> None:
    import torch

    from demos.memory_probes import SavedActivationMeter

    linear = torch.nn.Linear(16, 32)
    x = torch.randn(8, 16)
    with SavedActivationMeter(exclude=linear.parameters()) as meter:
        hidden = torch.relu(linear(x))  # linear saves x (and its weight); relu saves its output
        out = hidden * hidden  # saves hidden twice: one storage
    out.sum().backward()
    assert meter.bytes_ == 8 * 16 * 4 + 8 * 32 * 4
    assert meter.saves >= 4
