"""The layout planner: a hand-counted 8-GPU search, one step time term by term, and the
properties every plan keeps."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.calc.comm_volume import CommLayout, bucket_elements, stage_params
from app.calc.flops import megatron_flops_per_iteration, training_flops_per_token
from app.calc.links import LINKS, alpha_beta_time
from app.calc.model import PRESETS, ModelConfig
from app.calc.performance import PerformanceProfile, hardware
from app.calc.planner import (
    Layout,
    LayoutCost,
    Rejected,
    cluster,
    evaluate,
    placement,
    plan,
    plan_request,
    resolve_model,
    training_setup,
    violations,
    why_not,
)
from app.calc.planner.comm_costs import comm_seconds, communicator_bytes
from app.calc.planner.costs import Costs
from app.calc.planner.published import RUNS, request_for
from app.calc.planner.rules import degrees_of
from app.calc.planner.search import _divisors
from app.calc.planner.work import head_pass, layer_pass
from app.calc.published_runs import row_of, runs_of
from app.calc.training import training_memory

# 4 layers, h 64, 4 MHA heads, SwiGLU 256, vocab 128: P_layer = 4*64*64 + 3*64*256 = 65536.
TINY = ModelConfig(layers=4, hidden=64, heads=4, kv_heads=4, ffn_hidden=256, vocab=128, name="t")
NVLINK = LINKS["nvlink4"]


def tiny_request(**options: object) -> object:
    # 8 H100s in one node; 8 sequences of 16 tokens per step.
    return plan_request(TINY, cluster(nodes=1), 8 * 16, 16, 1e9, **options)


def test_training_flops_per_token_is_equation_3_for_gpt() -> None:
    # GPT layer: 12 h^2 matmul weights, d_attn = h, logits V h. Full recompute gives
    # Narayanan et al.'s equation (3) per token; no recompute its 72 (...) form.
    b, s, l, h, v = 8, 2048, 24, 2304, 51200  # noqa: E741
    full = training_flops_per_token(12 * h * h, l, v * h, s, h, "full")
    assert full * b * s == pytest.approx(megatron_flops_per_iteration(b, s, l, h, v))
    none = training_flops_per_token(12 * h * h, l, v * h, s, h, "none")
    assert none * b * s == pytest.approx(
        megatron_flops_per_iteration(b, s, l, h, v, recompute=False)
    )
    selective = training_flops_per_token(12 * h * h, l, v * h, s, h, "selective")
    assert selective - none == pytest.approx(l * 4 * s * h)


def test_eight_gpus_counted_by_hand() -> None:
    # Ordered splits of 8 = 2^3 into (tp, pp, cp, dp): C(6, 3) = 20. tp=8 breaks the 4
    # heads, pp=8 the 4 layers: 18 valid splits. With one schedule, one recompute mode and
    # b=1, a split with dp*cp > 1 has 5 ZeRO options, one with dp*cp = 1 ((tp,pp) = (2,4)
    # or (4,2)) only ZeRO-0: 16*5 + 2*1 = 82 valid, 2 + 18*5 = 92 looked at.
    result = plan(tiny_request(schedules=("1f1b",), recompute_modes=("none",), max_micro_batch=1))
    by_rule = {g.rule: g.count for g in result.rejected}
    assert by_rule == {"tp_divides_heads": 1, "pp_divides_layers": 1, "zero_needs_dp": 8}
    assert (result.enumerated, result.valid, result.feasible) == (92, 82, 82)


PROFILE = PerformanceProfile(
    intra_link_efficiency=0.5, overlap_slowdown=0.25, kernel_overhead_s=1e-6,
    microbatch_overhead_s=1e-5, step_overhead_s=1e-3, allocator_fraction=0.1,
)  # fmt: skip


def test_one_layout_step_time_term_by_term() -> None:
    # tp=2, pp=2, dp=2, ZeRO-0, no recompute, b=1, 1F1B: m = 8 / 2 / 1 = 4 micro-batches.
    req = tiny_request(matmul_efficiency=0.5, profile=PROFILE)
    lay = Layout(dp=2, tp=2, pp=2)
    cost = evaluate(req, lay)
    assert isinstance(cost, LayoutCost)
    assert cost.microbatches == 4
    hw = hardware(PROFILE, 989.4e12, 0.5, 3.35e12)
    # Equal stages (pp divides the layers): the last one sets the pace, 2 layers and the
    # output layer with the loss. One micro-batch of one 16-token sequence, tp 2 with SP.
    layer = layer_pass(TINY, 16, 1, 2, True, 1, 1, True, False, hw)
    head = head_pass(TINY, 16, 1, 2, True, 1, hw)
    compute = 2 * layer.compute_s + head.compute_s
    memory = 2 * layer.memory_s + head.memory_s
    fixed = (2 * layer.kernels + head.kernels) * 1e-6 + 1e-5
    link = replace(NVLINK, bandwidth_bytes_per_s=450e9 * 0.5)  # the profile's bus bandwidth
    tp_call = alpha_beta_time(512 * 2, 1, link)  # (t-1)/t * b*s*h = 512 bf16 values
    tp_mb = 16 * tp_call  # 4 all-gathers + 4 reduce-scatters per layer, 2 layers (SP)
    # DP: all-reduce of the first stage's 2*(65536/2 + 128) + 128*64/2 = 69888 params, one
    # bucket (bucket_elements(2) = 40M): it starts when the backward ends, so none is hidden.
    dp_step = alpha_beta_time(2 * (1 / 2) * 69888 * 2, 2, link)
    pp_call = alpha_beta_time(512 * 2, 1, link)  # b*s*h/t values each way
    report = training_memory(training_setup(req, lay, 4))
    moved = sum(
        report.term(k).gpu_bytes * n
        for k, n in (("master", 2), ("optimizer", 2), ("grads", 1), ("weights", 1))
    )
    assert cost.step.compute == pytest.approx(4 * compute)
    assert cost.step.memory_bound == pytest.approx(4 * memory + moved / hw.hbm_bytes_per_s)
    assert cost.step.recompute == 0
    assert cost.step.exposed_tp == pytest.approx(4 * tp_mb)
    assert cost.step.exposed_cp_ep == 0
    assert cost.step.exposed_pp == pytest.approx(2 * 4 * pp_call)
    assert cost.step.exposed_dp == pytest.approx(dp_step)
    # 1F1B bubble (p-1)(t_f + t_b + t_w): a third of the micro-batch each, TP time split
    # between forward and backward.
    assert cost.step.bubble == pytest.approx(compute + memory + fixed + tp_mb)
    assert cost.step.fixed == pytest.approx(4 * fixed + 1e-3)
    assert cost.step_time_s == pytest.approx(sum(cost.step.terms().values()))
    tokens_per_s = 128 / cost.step_time_s
    assert cost.tokens_per_s == pytest.approx(tokens_per_s)
    model_flops = 128 * training_flops_per_token(65536, 4, 128 * 64, 16, 64)
    assert cost.mfu == pytest.approx(model_flops / cost.step_time_s / (8 * 989.4e12))
    assert cost.days == pytest.approx(1e9 / tokens_per_s / 86400)
    # Memory: the first stage's textbook terms (it keeps 2 micro-batches) plus NCCL's buffers
    # for its tp, dp and two pipeline communicators, and the allocator's reserve over that.
    allocated = report.gpu_bytes + 4 * PROFILE.nccl_bytes
    assert cost.loss_bytes == 0  # 1F1B's first stage holds more than the last with its loss
    assert cost.allocator_bytes == pytest.approx(0.1 * allocated)
    assert cost.memory_bytes == pytest.approx(1.1 * allocated)


def test_the_last_gradient_bucket_is_exposed_and_grows_with_dp() -> None:
    # Megatron-Core's default bucket is max(40M, 1M x DP) parameters; the last bucket's
    # collectives wait for the backward's end. Nemotron-4 15B's weak scaling (Table 2: same
    # work per GPU, DP 96 -> 288) then exposes more DP time at larger DP, and none of the
    # rest of the step moves.
    assert bucket_elements(8) == 40_000_000 and bucket_elements(288) == 288_000_000
    row = row_of("nemotron4-15b-768")
    steps = {}
    for dp in (96, 288):
        run = next(r for r in runs_of("published") if r.request.cluster.nodes == dp
                   and r.request.model == row.model)  # fmt: skip
        costs = Costs(run.request)
        d = degrees_of(run.layout)
        *_, per_step, per_mb, _, tail = costs.zero_terms(d, 0, True)
        params = sum(stage_params(costs._comm_layout(d, 1, 1, 1)))
        assert tail == pytest.approx(per_step * dp * 1e6 / params)
        cost = evaluate(run.request, run.layout)
        assert isinstance(cost, LayoutCost)
        assert cost.step.exposed_dp >= tail
        steps[dp] = cost.step
    assert steps[288].exposed_dp > steps[96].exposed_dp
    assert steps[288].compute == pytest.approx(steps[96].compute)


def test_the_loss_peak_sets_memory_where_the_logits_are_large() -> None:
    # One stage, a 32k vocabulary over 4096 tokens: the loss's temporaries, 14 - 4 bytes per
    # logit beyond app.calc.activations' fp32 copy, outweigh the first stage's activations.
    cfg = ModelConfig(layers=2, hidden=256, heads=4, kv_heads=4, ffn_hidden=512, vocab=32768)
    req = plan_request(cfg, cluster(nodes=1), 8 * 4096, 4096, 1e9, profile=PROFILE)
    cost = evaluate(req, Layout(dp=8))
    assert isinstance(cost, LayoutCost)
    assert cost.loss_bytes == pytest.approx((14 - 4) * 4096 * 32768)
    report = training_memory(training_setup(req, Layout(dp=8), 1))
    allocated = report.gpu_bytes + cost.loss_bytes + PROFILE.nccl_bytes
    assert cost.memory_bytes == pytest.approx(1.1 * allocated)


def test_placement_is_tp_cp_ep_dp_pp() -> None:
    req = plan_request("llama3-70b", cluster(nodes=4), 32 * 8192, 8192, 1e9)
    where = placement(req, Layout(dp=2, tp=4, pp=2, cp=2))
    # tp 4 and tp*cp 8 fit a node; tp*cp*dp = 16 and the whole 32 do not.
    assert (where.tp, where.cp, where.dp, where.pp) == (
        "intra-node", "intra-node", "inter-node", "inter-node",
    )  # fmt: skip


def test_rules_name_what_breaks() -> None:
    req = tiny_request()
    broken = violations(req, Layout(dp=1, tp=8, pp=1))
    # tp = 8 over 4 heads breaks the heads rule; the KV heads may be fewer than tp ranks
    # (Megatron-Core replicates them), so that rule holds.
    assert [r.rule for r in broken] == ["tp_divides_heads"]
    assert "4 attention heads" in broken[0].reason
    # 3 KV heads and tp = 2 divide neither way: no layout of the heads exists.
    odd = ModelConfig(layers=4, hidden=96, heads=6, kv_heads=3, ffn_hidden=256, vocab=128,
                      name="odd")  # fmt: skip
    odd_req = plan_request(odd, cluster(nodes=1), 8 * 16, 16, 1e9)
    assert [r.rule for r in violations(odd_req, Layout(dp=4, tp=2, pp=1))] == [
        "tp_divides_kv_heads"
    ]
    assert [r.rule for r in violations(req, Layout(dp=2, tp=2, pp=2, micro_batch=3))] == [
        "micro_batch_divides"
    ]
    rejected = evaluate(req, Layout(dp=8, schedule="interleaved", virtual_stages=2))
    assert isinstance(rejected, Rejected) and rejected.rule == "schedule_needs_pp"
    assert [r.rule for r in violations(req, Layout(dp=4, tp=1))] == ["world_size"]


def test_a_required_fused_softmax_cuts_layouts_its_kernel_cannot_run() -> None:
    # BLOOM's 112 heads: tp 8 leaves 14 per GPU, so one sequence per micro-batch gives 14
    # attention batches, not a multiple of 4 (Megatron-DeepSpeed initialize.py); two give 28.
    run = RUNS["bloom-176b"]
    req = request_for(run)
    assert req.fused_softmax_required and not req.flash_attention
    odd = replace(run.layout, dp=8, tp=8, pp=6, micro_batch=1)
    assert [r.rule for r in violations(req, odd)] == ["fused_softmax"]
    assert "14" in str(violations(req, odd)[0].reason)
    assert not violations(req, replace(odd, micro_batch=2))
    # Flash attention has no such kernel, and a run that does not require it falls back.
    assert not violations(replace(req, fused_softmax_required=False), odd)
    assert not violations(replace(req, flash_attention=True), odd)
    # The search cuts the same layouts.
    assert any(group.rule == "fused_softmax" for group in plan(req).rejected)


def test_why_not_blames_a_term() -> None:
    result = plan(tiny_request())
    assert result.best is not None
    slow = Layout(dp=2, tp=2, pp=2, recompute="full")
    answer = why_not(result, slow)
    assert answer.slowdown is not None and answer.slowdown > 1
    assert answer.blame in answer.cost.step.terms()
    assert why_not(result, Layout(dp=1, tp=8)).rejected[0].rule == "tp_divides_heads"
    assert why_not(result, result.best.layout).slowdown == pytest.approx(1)


def test_models_from_preset_dict_or_config() -> None:
    assert resolve_model("llama3-8b") is PRESETS["llama3-8b"]
    hf = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64,
          "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 128}  # fmt: skip
    assert resolve_model(hf).layers == 4
    assert resolve_model(TINY) is TINY
    with pytest.raises(ValueError, match="whole number"):
        plan_request(TINY, cluster(), 100, 16, 1e9)


requests = st.builds(
    lambda nodes, per_node, seqs, model: plan_request(
        model, cluster(gpus_per_node=per_node, nodes=nodes), seqs * 64, 64, 1e9,
        max_micro_batch=4, max_virtual_stages=2,
    ),
    nodes=st.sampled_from([1, 2]),
    per_node=st.sampled_from([2, 4]),
    seqs=st.sampled_from([8, 16]),
    model=st.sampled_from([TINY, ModelConfig(layers=6, hidden=96, heads=6, kv_heads=2,
                                             ffn_hidden=128, vocab=100, experts=4, top_k=2)]),
)  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(requests)
def test_every_plan_keeps_its_properties(req: object) -> None:
    result = plan(req)
    gpus = req.cluster.gpus
    for cost in result.ranked + result.pareto:
        assert cost.layout.world_size == gpus
        assert cost.fits and cost.memory_bytes <= req.cluster.gpu_memory_bytes
        assert not violations(req, cost.layout)
        # The planner's memory is app.calc.training's, called directly, with NCCL's buffers,
        # and the caching allocator's reserve over all that is allocated; where the last
        # stage's loss peaks higher than the first stage, more.
        setup = training_setup(req, cost.layout, cost.microbatches)
        textbook = training_memory(setup).gpu_bytes
        textbook += communicator_bytes(req.profile, degrees_of(cost.layout))
        allocated = cost.memory_bytes - cost.allocator_bytes
        assert cost.allocator_bytes == pytest.approx(req.profile.allocator_fraction * allocated)
        if cost.loss_bytes == 0:
            assert allocated == pytest.approx(textbook)
        else:
            assert allocated > textbook
    steps = [round(c.step_time_s, 6) for c in result.ranked]  # a microsecond is a tie
    assert steps == sorted(steps)
    for a in result.pareto:  # non-dominated
        assert not any(
            b.step_time_s <= a.step_time_s
            and b.memory_bytes < a.memory_bytes
            or b.step_time_s < a.step_time_s
            and b.memory_bytes <= a.memory_bytes
            for b in result.pareto
        )
    if result.ranked:
        # Ties go to the smaller memory, so the best layout is itself on the front.
        assert result.ranked[0].layout == result.pareto[0].layout


@given(st.integers(1, 5000))
def test_divisors_are_every_divisor_ascending(n: int) -> None:
    assert _divisors(n) == [k for k in range(1, n + 1) if n % k == 0]


@settings(max_examples=15, deadline=None)
@given(requests, st.data())
def test_zero_never_adds_model_state_memory(req: object, data: st.DataObject) -> None:
    result = plan(req)
    if not result.ranked:
        return
    lay = data.draw(st.sampled_from(result.ranked)).layout
    if lay.dp * lay.cp == 1:
        return
    states = []
    for stage in range(4):
        cost = evaluate(req, Layout(lay.dp, lay.tp, lay.pp, lay.cp, lay.ep, stage, False))
        assert isinstance(cost, LayoutCost)
        states.append(cost.model_states_bytes)
    assert states == sorted(states, reverse=True)


@settings(max_examples=15, deadline=None)
@given(requests, st.data())
def test_comm_read_from_three_calls_matches_direct(req: object, data: st.DataObject) -> None:
    # The search reads c0 + c1 m + c2 b m per strategy from three calls of step_calls; any
    # (b, m) must give the same seconds as timing step_calls directly.
    result = plan(req)
    if not result.ranked:
        return
    lay = data.draw(st.sampled_from(result.ranked)).layout
    b, m = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6))
    d = degrees_of(lay)
    costs = Costs(req)
    grid = costs.grid(d)
    _, _, dp_step, dp_mb, _, _ = costs.zero_terms(d, lay.zero_stage, lay.distributed_optimizer)
    direct = comm_seconds(
        req,
        CommLayout(req.model, lay.dp, lay.tp, lay.pp, lay.ep, lay.cp,
                   1 if lay.distributed_optimizer else lay.zero_stage, lay.sp,
                   req.seq_len, b, m),
        grid.placement,
    )  # fmt: skip
    for key in ("tp", "cp", "ep", "pp"):
        read = m * (grid.per_mb_latency[key] + b * grid.per_mb_per_seq[key])
        assert read == pytest.approx(direct[key], abs=1e-15)
    assert dp_step + m * dp_mb == pytest.approx(direct["dp"], abs=1e-15)


def test_seventy_b_on_1024_h100s_finds_layouts() -> None:
    req = plan_request("llama3-70b", cluster(nodes=128), 4 * 1024 * 1024, 8192, 15e12)
    result = plan(req)
    assert result.feasible > 1000
    best = result.best
    assert best is not None and best.layout.tp <= 8
    assert 0 < best.mfu < req.efficiency
    assert math.isclose(best.days, 15e12 / best.tokens_per_s / 86400)
