"""Interleaved 1F1B in torch's order (the pipeline-schedules demo) against Megatron-LM's.

torch 2.13's ScheduleInterleaved1F1B warms up min((v - 1) p + 2(p - 1 - rank), m v)
chunk-forwards with no exception at m = p (torch/distributed/pipelining/schedules.py:2872-2888),
where Megatron-LM runs every forward first. The orders below are written out from that code.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.calc.pipeline import Action, PipelineSetup, simulate, stage_orders


def _torch(p: int, m: int, v: int = 2, **times: float) -> PipelineSetup:
    return PipelineSetup("interleaved", p, m, v, interleaved_order="torch", **times)


def _written(*actions: str) -> list[Action]:
    """'F10' is the forward of micro-batch 1 on chunk 0, 'BW01' the backward of 0 on chunk 1."""
    return [Action("F" if a[0] == "F" else "BW", int(a[-2]), int(a[-1])) for a in actions]


# Rank r: F through the first chunk for micro-batches 0..m-1, then the next chunk; its warm-up
# is the first min((v - 1) p + 2(p - 1 - r), m v) of those; then one forward and one backward
# in turn, backwards taking the chunks in reverse; then the remaining backwards.
BY_HAND = [
    # p = 2, m = 2, v = 2: rank 0 warms up min(2 + 2, 4) = 4, rank 1 min(2 + 0, 4) = 2.
    (2, 2, 2, 1, ["F00", "F10", "F01", "BW01", "F11", "BW11", "BW00", "BW10"]),
    # p = 2, m = 2, v = 3: rank 1 warms up min(4 + 0, 6) = 4.
    (2, 2, 3, 1, ["F00", "F10", "F01", "F11", "F02", "BW02", "F12", "BW12",
                  "BW01", "BW11", "BW00", "BW10"]),
    # p = 4, m = 4, v = 2: rank 2 warms up min(4 + 2, 8) = 6, rank 3 min(4 + 0, 8) = 4.
    (4, 4, 2, 2, ["F00", "F10", "F20", "F30", "F01", "F11", "F21", "BW01", "F31", "BW11",
                  "BW21", "BW31", "BW00", "BW10", "BW20", "BW30"]),
    (4, 4, 2, 3, ["F00", "F10", "F20", "F30", "F01", "BW01", "F11", "BW11", "F21", "BW21",
                  "F31", "BW31", "BW00", "BW10", "BW20", "BW30"]),
]  # fmt: skip


@pytest.mark.parametrize(("p", "m", "v", "stage", "order"), BY_HAND)
def test_torch_order_by_hand(p: int, m: int, v: int, stage: int, order: list[str]) -> None:
    assert stage_orders(_torch(p, m, v))[stage] == _written(*order)


def test_two_ranks_two_micro_batches_differ_from_megatron_on_the_last_rank_only() -> None:
    torch_order = stage_orders(_torch(2, 2))
    megatron = stage_orders(PipelineSetup("interleaved", 2, 2, 2))
    assert torch_order[0] == megatron[0]
    assert megatron[1] == _written("F00", "F10", "F01", "F11", "BW01", "BW11", "BW00", "BW10")
    assert torch_order[1] != megatron[1]


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("v", [2, 3, 4])
@pytest.mark.parametrize("groups", [1, 2, 3])
def test_orders_differ_only_at_m_equal_p_on_stages_from_p_over_2(
    p: int, v: int, groups: int
) -> None:
    m = groups * p
    torch_order = stage_orders(_torch(p, m, v))
    megatron = stage_orders(PipelineSetup("interleaved", p, m, v))
    differ = [s for s in range(p) if torch_order[s] != megatron[s]]
    assert differ == ([s for s in range(p) if 2 * s >= p] if m == p else [])


@pytest.mark.parametrize(("p", "v"), [(2, 2), (2, 3), (3, 2), (4, 2), (4, 4), (8, 2)])
def test_same_step_bubble_and_first_stage_peak_as_megatron(p: int, v: int) -> None:
    # Only memory on the later stages moves; every published figure stays.
    times = {"t_f": 1.0, "t_b": 2.0, "t_w": 0.5}
    torch_sim = simulate(_torch(p, p, v, **times))
    megatron = simulate(PipelineSetup("interleaved", p, p, v, **times))
    assert torch_sim.total_time == pytest.approx(megatron.total_time)
    assert torch_sim.bubble_over_ideal == pytest.approx(megatron.bubble_over_ideal)
    assert torch_sim.peak_in_flight[0] == megatron.peak_in_flight[0] == p
    assert torch_sim.peak_in_flight[-1] < megatron.peak_in_flight[-1]


def test_two_ranks_two_micro_batches_last_rank_holds_one_and_a_half() -> None:
    # F00 F10 F01 held (3 chunk-micro-batches = 1.5), then BW01 frees one before F11.
    assert simulate(_torch(2, 2)).peak_in_flight == [2.0, 1.5]


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("v", [2, 3])
@pytest.mark.parametrize("groups", [1, 2, 3])
def test_matches_torch_schedule_code(p: int, v: int, groups: int) -> None:
    # torch's own per-rank action lists, built without ranks: the method reads only these
    # four attributes, so a stand-in object runs the same code the demo's ranks run.
    schedules = pytest.importorskip("torch.distributed.pipelining.schedules")
    m = groups * p
    rounds = max(1, m // p)
    stand_in = SimpleNamespace(
        pp_group_size=p, n_local_stages=v, microbatches_per_round=m // rounds, _n_microbatches=m
    )
    kinds = {"FORWARD": "F", "FULL_BACKWARD": "BW"}
    simulated = stage_orders(_torch(p, m, v))
    for rank in range(p):
        ops = schedules.ScheduleInterleaved1F1B._calculate_single_rank_operations(stand_in, rank)
        expected = [
            Action(kinds[op.computation_type.name], op.microbatch_index, op.stage_index // p)
            for op in ops
            if op is not None
        ]
        assert simulated[rank] == expected
