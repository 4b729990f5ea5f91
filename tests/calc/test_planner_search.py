"""The planner search's shortcuts, each against the plain computation it stands for: the rule
verdicts shared between splits, the costs shared between splits, the rounding and the ranking
done on arrays (tests/calc/test_planner_pinned.py checks whole plans)."""

from __future__ import annotations

import gc
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from app.calc.comm_volume import bucket_elements, stage_params
from app.calc.model import ModelConfig
from app.calc.planner import Layout, PlanRequest, cluster, placement, plan, plan_request
from app.calc.planner.comm_costs import comm_seconds, communicator_bytes
from app.calc.planner.costs import Costs
from app.calc.planner.memory_setup import training_setup
from app.calc.planner.ranking import _fastest, _pareto, rounded_to_us
from app.calc.planner.request import RECOMPUTE, ZERO_OPTIONS
from app.calc.planner.rules import Degrees, degree_rules
from app.calc.planner.search import _divisors, _schedules, _Search, knob_problem
from app.calc.training import training_memory

DENSE = ModelConfig(layers=4, hidden=64, heads=4, kv_heads=4, ffn_hidden=256, vocab=128)
MOE = ModelConfig(layers=6, hidden=96, heads=6, kv_heads=2, ffn_hidden=128, vocab=100,
                  experts=4, top_k=2)  # fmt: skip

requests = st.builds(
    lambda model, per_node, nodes, seqs, gpipe, flash: plan_request(
        model, cluster(gpus_per_node=per_node, nodes=nodes), seqs * 64, 64, 1e9,
        uneven_pipeline=True, flash_attention=flash, max_micro_batch=8, max_virtual_stages=3,
        schedules=("1f1b", "interleaved", "zb-h1") + (("gpipe",) if gpipe else ()),
    ),
    model=st.sampled_from([DENSE, MOE]),
    per_node=st.sampled_from([1, 2, 4]),
    nodes=st.sampled_from([1, 2, 4]),
    seqs=st.sampled_from([1, 4, 12, 16]),
    gpipe=st.booleans(),
    flash=st.booleans(),
)  # fmt: skip


def _splits(req: PlanRequest) -> list[Degrees]:
    n, found = req.cluster.gpus, []
    for tp in _divisors(n):
        for pp in _divisors(n // tp):
            for cp in _divisors(n // (tp * pp)):
                dp = n // (tp * pp * cp)
                for ep in _divisors(math.gcd(dp * cp, req.model.experts)):
                    d = Degrees(dp, tp, pp, cp, ep, tp > 1)
                    if next(degree_rules(req, d), None) is None:
                        found.append(d)
    return found


@settings(max_examples=30, deadline=None)
@given(requests)
def test_shared_verdicts_are_each_candidates_own(req: PlanRequest) -> None:
    # One table of knob_rules' verdicts per (dp, pp), and a ZeRO rule cutting a whole ZeRO
    # option: every candidate gets the rule and the reason knob_rules gives it.
    search = _Search(req)
    for d in _splits(req):
        per_replica = req.global_batch_sequences // d.dp
        micro_batches = [b for b in _divisors(per_replica) if b <= req.max_micro_batch]
        schedules = _schedules(req, d.pp)
        verdicts = search.verdicts_of(d, micro_batches, schedules)
        for (zero, dist), table in zip(ZERO_OPTIONS, verdicts, strict=True):
            for b, row in zip(micro_batches, table.problems, strict=True):
                for (schedule, v), problem in zip(schedules, row, strict=True):
                    lay = Layout(d.dp, d.tp, d.pp, d.cp, d.ep, zero, dist, "none", b,
                                 schedule, v)  # fmt: skip
                    assert problem == knob_problem(req, lay), lay


@settings(max_examples=30, deadline=None)
@given(requests, st.booleans())
def test_shared_costs_are_each_splits_own(req: PlanRequest, zero_first: bool) -> None:
    # Read as the search read them before it shared anything between splits: three step_calls
    # and a memory report per split, ZeRO option and recompute mode. Equal to the last bit,
    # whichever of grids and ZeRO terms is asked first.
    costs, splits = Costs(req), _splits(req)
    if zero_first:
        for d in splits:
            costs.zero_terms(d, 3, False)
    for d in splits:
        lay = Layout(d.dp, d.tp, d.pp, d.cp, d.ep, sequence_parallel=d.sp)
        links = placement(req, lay)
        t = {
            (b, m): comm_seconds(req, costs._comm_layout(d, 0, b, m), links)
            for b, m in ((1, 1), (1, 2), (2, 2))
        }
        grid = costs.grid(d)
        for k in ("tp", "cp", "ep", "pp"):
            per_seq = (t[2, 2][k] - t[1, 2][k]) / 2
            assert grid.per_mb_per_seq[k] == per_seq
            assert grid.per_mb_latency[k] == t[1, 2][k] - t[1, 1][k] - per_seq
        for r in RECOMPUTE:
            report = training_memory(training_setup(req, Layout(
                d.dp, d.tp, d.pp, d.cp, d.ep, recompute=r, sequence_parallel=d.sp)))  # fmt: skip
            assert grid.activation_unit[r] == report.term("activations").gpu_bytes
        for zero, dist in ZERO_OPTIONS:
            own = Layout(d.dp, d.tp, d.pp, d.cp, d.ep, zero, dist, sequence_parallel=d.sp)
            report = training_memory(training_setup(req, own))
            states = report.model_states_gpu_bytes
            other = report.gpu_bytes - states - report.term("activations").gpu_bytes
            other += communicator_bytes(req.profile, d)
            stage = 1 if dist else zero
            t1, t2 = (
                comm_seconds(req, costs._comm_layout(d, stage, 1, m), links)["dp"] for m in (1, 2)
            )
            moved = sum(
                report.term(k).gpu_bytes * n
                for k, n in (("master", 2), ("optimizer", 2), ("grads", 1), ("weights", 1))
            )
            params = sum(stage_params(costs._comm_layout(d, stage, 1, 1)))
            last = min(1.0, bucket_elements(d.dp * d.cp) / params) if params else 1.0
            assert costs.zero_terms(d, zero, dist) == (
                states, other, 2 * t1 - t2, t2 - t1, moved / costs.hw.hbm_bytes_per_s,
                last * (2 * t1 - t2),
            )  # fmt: skip


@settings(max_examples=10, deadline=None)
@given(requests)
def test_the_arrays_give_each_layouts_own_step_time(req: PlanRequest) -> None:
    # The search ranks on numpy arrays (step_formulas.step_numbers over a block's axes); the layouts
    # it lists are costed one by one (Costs.cost). Each listed layout's own step time, to the
    # microsecond, is among the array's, and as many layouts are faster by either count.
    result = plan(req)
    times = set(result.step_times_s)
    for index, cost in enumerate(result.ranked):
        fresh = Costs(req).cost(cost.layout)
        assert fresh.step_time_s == cost.step_time_s
        assert round(cost.step_time_s, 6) in times
        assert result.rank_of(cost.step_time_s) <= index + 1


@settings(max_examples=200)
@given(
    st.one_of(
        st.floats(0, 1e4),
        st.floats(1e-9, 1e9),
        # halves of a microsecond and their neighbours: where t * 1e6 is rounded onto or
        # across a half
        st.builds(
            lambda k, step: np.nextafter((k + 0.5) / 1e6, (k + 0.5) / 1e6 + step),
            st.integers(0, 10**10),
            st.sampled_from([-1, 0, 1]),
        ),  # fmt: skip
        st.sampled_from([0.0, 1e300, math.inf, math.nan, 2.0**52 / 1e6, 0.0000005]),
    )
)
def test_rounded_to_us_is_round(t: float) -> None:
    mine = float(rounded_to_us(np.array([t]))[0])
    python = round(float(t), 6)
    assert repr(mine) == repr(python)


def _ranked_by_sort(rounded: np.ndarray, memory: np.ndarray) -> list[int]:
    return sorted(range(len(rounded)), key=lambda i: (rounded[i], memory[i]))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=60), st.integers(1, 8))
def test_fastest_and_front_are_those_of_a_full_sort(pairs: list, top: int) -> None:
    # Few distinct times and memories: ties in both, decided by search order.
    rounded = np.array([p[0] for p in pairs], float)
    memory = np.array([p[1] for p in pairs], float)
    order = _ranked_by_sort(rounded, memory)
    assert _fastest(rounded, memory, top).tolist() == order[:top]
    front: list[int] = []
    for i in order:
        if not front or memory[i] < memory[front[-1]]:
            front.append(i)
    assert _pareto(rounded, memory).tolist() == front


def test_the_search_leaves_the_cycle_collector_as_it_found_it() -> None:
    # plan pauses Python's cyclic collector while it runs (search._without_cycle_collection)
    req = plan_request("llama3-8b", cluster(nodes=1), 64 * 4096, 4096, 1e12)
    assert gc.isenabled()
    plan(req)
    assert gc.isenabled()
    gc.disable()
    try:
        plan(req)
        assert not gc.isenabled()
    finally:
        gc.enable()
