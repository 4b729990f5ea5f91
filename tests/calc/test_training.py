"""Training memory per GPU: agreement with ZeRO and Megatron, a hand-derived report, invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.calc.activations import ActivationSetup
from app.calc.memory import ZERO_STAGES, model_states_per_gpu
from app.calc.model import PRESETS, ModelConfig, count_params
from app.calc.training import MAX_MICRO_BATCH, memory_vs_dp, training_memory, verdict
from app.calc.training_types import MeasuredTerms, Parallelism, TrainingSetup
from app.calc.units import MIB

# 2 layers, h = 64, 4 heads, SwiGLU of width 256, RMSNorm, vocab 1000, untied.
TINY = ModelConfig(layers=2, hidden=64, heads=4, kv_heads=4, ffn_hidden=256, vocab=1000)
SHORT = ActivationSetup(seq_len=16, micro_batch=1)


def tiny_setup(**parallel: int | bool) -> TrainingSetup:
    return TrainingSetup(model=TINY, parallel=Parallelism(**parallel), activations=SHORT)


@pytest.mark.parametrize("stage", ZERO_STAGES)
@pytest.mark.parametrize("preset", ["llama2-7b", "gpt3-175b"])
def test_model_states_equal_zero_paper_formula(stage: int, preset: str) -> None:
    setup = TrainingSetup(
        model=PRESETS[preset],
        parallel=Parallelism(dp=64, zero_stage=stage),
        activations=ActivationSetup(seq_len=2048, micro_batch=1),
    )
    report = training_memory(setup)
    # tp = pp = 1: this GPU holds the whole model before ZeRO.
    assert report.params_on_gpu == report.params.total
    expected = model_states_per_gpu(report.params.total, 64, stage)
    assert report.term("weights").gpu_bytes == pytest.approx(expected.weights_bytes, rel=1e-12)
    assert report.term("grads").gpu_bytes == pytest.approx(expected.grads_bytes, rel=1e-12)
    optimizer = report.term("master").gpu_bytes + report.term("optimizer").gpu_bytes
    assert optimizer == pytest.approx(expected.optimizer_bytes, rel=1e-12)
    assert report.model_states_gpu_bytes == pytest.approx(expected.total_bytes, rel=1e-12)


@pytest.mark.parametrize("d", [1, 2, 8, 64])
def test_megatron_distributed_optimizer_6_plus_12_over_d(d: int) -> None:
    # Megatron-LM docs/user-guide/features/dist_optimizer.md: bf16 params with fp32 grads
    # take 18 bytes per parameter, 6 + 12/d with the distributed optimizer.
    plain = replace(tiny_setup(dp=d), recipe="mixed_bf16_fp32_grads")
    dist = replace(plain, parallel=Parallelism(dp=d, distributed_optimizer=True))
    for setup, per_param in ((plain, 18), (dist, 6 + 12 / d)):
        report = training_memory(setup)
        assert report.model_states_gpu_bytes / report.params_on_gpu == pytest.approx(per_param)


def test_tiny_report_by_hand() -> None:
    setup = replace(
        TrainingSetup(
            model=TINY,
            parallel=Parallelism(dp=2, tp=2, zero_stage=1),
            activations=ActivationSetup(seq_len=16, micro_batch=1, tp=2),
        ),
        overhead_bytes=1e9,
    )
    report = training_memory(setup)
    # Per layer: attention 4 * 64 * 64 = 16384, SwiGLU 3 * 64 * 256 = 49152, two RMSNorms
    # 128. On one of 2 tp ranks: (16384 + 49152) / 2 + 128 = 32896, two layers 65792.
    # Embedding 1000 * 64 / 2 = 32000; output 32000 + final norm 64 = 32064 (pp = 1).
    psi = 65792 + 32000 + 32064
    assert report.params_on_gpu == psi == 129856
    # ZeRO-1 over dp = 2: 2 B weights and 2 B grads whole; 4 B master and 8 B Adam halved.
    assert report.term("weights").gpu_bytes == 2 * psi
    assert report.term("grads").gpu_bytes == 2 * psi
    assert report.term("master").gpu_bytes == 4 * psi / 2
    assert report.term("optimizer").gpu_bytes == 8 * psi / 2
    # Activations, B = 2, s*b = 16 tokens, t = 2, no SP (whole outside TP), dropout on:
    # attention 2*16*64 (QKV in) + 2*16*(32+32+32) (Q,K,V) + 2*16*32 (out-proj in)
    #   + 16*64 (mask) = 2048 + 3072 + 1024 + 1024 = 7168;
    # scores (4/2 heads)*16*16 = 512 elements * (2 softmax + 1 mask + 2 dropout) = 2560;
    # MLP 2*16*64 (in) + 3*2*16*256/2 (gate, up, product) + 16*64 (mask) = 15360;
    # norms 2*2*16*64 = 4096. Layer 29184, times 2 layers and 1 micro-batch: 58368.
    # Embedding: mask 16*64 + int64 ids 8*16 = 1152. Output: 2*2*16*64 + fp32 logits
    # 4*16*1000/2 = 36096.
    activations = 58368 + 1152 + 36096
    assert report.term("activations").gpu_bytes == activations
    assert report.term("buffers").gpu_bytes == 0  # the gradients are the buckets' views
    assert report.term("overhead").gpu_bytes == 1e9
    assert report.gpu_bytes == 2 * psi + 2 * psi + 2 * psi + 4 * psi + activations + 1e9
    assert report.cpu_bytes == 0
    for term in report.terms:
        assert term.formula and term.source
        assert term.substituted.endswith(r"\ \text{GB}")
    # torch DDP's default copies every gradient into its buckets: 2 B (bf16 grads) a parameter.
    copied = training_memory(replace(setup, grad_bucket_copy=True))
    assert copied.term("buffers").gpu_bytes == 2 * psi == report.term("grads").gpu_bytes
    assert copied.gpu_bytes == report.gpu_bytes + 2 * psi


@pytest.mark.parametrize("stage", [0, 1])
def test_ddp_bucket_copy_is_the_gradients_of_this_gpu_again(stage: int) -> None:
    # fp32 training with plain DDP (Adam in fp32, 4 B gradients): the demo's case. With
    # experts too: the buckets hold every gradient the GPU reduces, dense and expert alike.
    moe = ModelConfig(layers=2, hidden=64, heads=4, kv_heads=4, ffn_hidden=128, vocab=100,
                      experts=4, top_k=2)  # fmt: skip
    setup = TrainingSetup(
        model=moe,
        parallel=Parallelism(dp=4, ep=2, zero_stage=stage),
        activations=ActivationSetup(seq_len=16, micro_batch=1),
        recipe="fp32",
        grad_bucket_copy=True,
    )
    report = training_memory(setup)
    assert report.term("buffers").gpu_bytes == 4 * report.params_on_gpu
    assert report.term("buffers").gpu_bytes == report.term("grads").gpu_bytes


def test_zero2_and_zero3_buffers_do_not_depend_on_the_ddp_bucket_copy() -> None:
    for stage, expected in ((2, 25 * MIB), (3, None)):
        setup = _setup(TINY, dp=2, zero_stage=stage)
        plain = training_memory(setup).term("buffers")
        copied = training_memory(replace(setup, grad_bucket_copy=True)).term("buffers")
        assert plain == copied
        if expected is not None:
            assert plain.gpu_bytes == expected


def test_offload_optimizer_moves_master_optimizer_and_gradient_shard_to_cpu() -> None:
    # ZeRO-Offload (stage 2): the gradient shard streams to the CPU optimizer too, so the GPU
    # keeps only the 16-bit weights of the model states, DeepSpeed's "2 Psi" with offload.
    base = tiny_setup(dp=4, zero_stage=2)
    moved = replace(base, parallel=replace(base.parallel, offload_optimizer=True))
    before, after = training_memory(base), training_memory(moved)
    shifted = sum(before.term(k).gpu_bytes for k in ("grads", "master", "optimizer"))
    assert after.cpu_bytes == shifted > 0
    assert before.gpu_bytes - after.gpu_bytes == pytest.approx(shifted, rel=1e-12)
    assert after.model_states_gpu_bytes == before.term("weights").gpu_bytes


def test_offload_with_zero_1_keeps_whole_gradients_on_the_gpu() -> None:
    base = tiny_setup(dp=4, zero_stage=1)
    moved = training_memory(replace(base, parallel=replace(base.parallel, offload_optimizer=True)))
    assert moved.term("grads").gpu_bytes == training_memory(base).term("grads").gpu_bytes


def test_fp32_training_keeps_activations_in_4_bytes() -> None:
    mixed = training_memory(tiny_setup())
    fp32 = training_memory(replace(tiny_setup(), recipe="fp32"))
    assert fp32.term("activations").gpu_bytes > mixed.term("activations").gpu_bytes


def test_offload_params_moves_weights_and_needs_zero_3() -> None:
    base = tiny_setup(dp=4, zero_stage=3, offload_optimizer=True)
    moved = replace(base, parallel=replace(base.parallel, offload_params=True))
    before, after = training_memory(base), training_memory(moved)
    weights = before.term("weights").gpu_bytes
    assert after.cpu_bytes - before.cpu_bytes == weights > 0
    assert before.gpu_bytes - after.gpu_bytes == pytest.approx(weights, rel=1e-12)
    with pytest.raises(ValueError, match="zero_stage 3"):
        training_memory(tiny_setup(dp=4, zero_stage=2, offload_params=True))


def test_zero_3_buffer_is_deepspeeds_4_times_largest_layer() -> None:
    report = training_memory(tiny_setup(dp=2, zero_stage=3))
    # The largest unit is one layer, 16384 + 49152 + 128 = 65664 parameters, ahead of the
    # 64000 embedding and the 64064 output projection + final norm; 2 B gathered + 2 B grads.
    assert report.term("buffers").gpu_bytes == 4 * 65664


def test_llama3_70b_on_64_gpus() -> None:
    cfg = PRESETS["llama3-70b"]
    setup = TrainingSetup(
        model=cfg,
        parallel=Parallelism(dp=4, tp=8, pp=2, zero_stage=1),
        activations=ActivationSetup(seq_len=8192, micro_batch=1, sp=True, recompute="selective"),
        microbatches=8,
    )
    report = training_memory(setup)
    p = count_params(cfg)
    assert setup.parallel.world_size == 64
    assert report.layers_in_stage == 40 and report.in_flight == 2  # 1F1B: p micro-batches
    # First stage: 40 layers of (attention + MLP)/8 + norms, and the vocab-parallel embedding.
    assert report.params_on_gpu == 40 * ((p.attention + p.mlp) / 8 + p.norms) + p.embedding / 8
    assert report.term("master").gpu_bytes == 4 * report.params_on_gpu / 4
    assert verdict(setup, 80e9).fits


def test_expert_parallel_shards_experts_and_their_zero_group() -> None:
    cfg = PRESETS["mixtral-8x7b"]
    acts = ActivationSetup(seq_len=512, micro_batch=1)
    setup = TrainingSetup(cfg, Parallelism(dp=8, ep=8, zero_stage=1), acts)
    report = training_memory(setup)
    p = count_params(cfg)
    dense = p.total - p.layers * p.experts
    expert = p.layers * p.experts / 8  # one expert per GPU
    assert report.params_on_gpu == pytest.approx(dense + expert)
    # Expert data-parallel degree dp / ep = 1: the experts' optimizer states are not sharded.
    assert report.term("optimizer").gpu_bytes == pytest.approx(8 * (dense / 8 + expert))
    with pytest.raises(ValueError, match="must divide dp"):
        training_memory(replace(setup, parallel=Parallelism(dp=4, ep=8)))


small_models = st.builds(
    ModelConfig,
    layers=st.integers(1, 16),
    hidden=st.sampled_from([64, 128, 256]),
    heads=st.sampled_from([4, 8]),
    kv_heads=st.just(4),
    ffn_hidden=st.integers(64, 1024),
    vocab=st.integers(100, 5000),
    tied_embeddings=st.booleans(),
)


def _setup(cfg: ModelConfig, **parallel: int | bool) -> TrainingSetup:
    return TrainingSetup(cfg, Parallelism(**parallel), ActivationSetup(seq_len=64, micro_batch=1))


@given(small_models, st.integers(1, 512), st.integers(1, 8), st.sampled_from(ZERO_STAGES))
def test_more_dp_never_raises_model_states(
    cfg: ModelConfig, dp: int, factor: int, stage: int
) -> None:
    fewer = training_memory(_setup(cfg, dp=dp, zero_stage=stage)).model_states_gpu_bytes
    more = training_memory(_setup(cfg, dp=dp * factor, zero_stage=stage)).model_states_gpu_bytes
    assert more <= fewer * (1 + 1e-12)


@given(small_models, st.integers(1, 512), st.sampled_from([0, 1, 2]))
def test_higher_zero_stage_never_raises_model_states(cfg: ModelConfig, dp: int, stage: int) -> None:
    # Model states only: the total can rise from stage 2 to 3, where DeepSpeed's gathered
    # largest layer (4 B per parameter) replaces a 25 MiB bucket on a small model.
    low = training_memory(_setup(cfg, dp=dp, zero_stage=stage)).model_states_gpu_bytes
    high = training_memory(_setup(cfg, dp=dp, zero_stage=stage + 1)).model_states_gpu_bytes
    assert high <= low * (1 + 1e-12)


@given(small_models, st.sampled_from([1, 2, 4]))
def test_tp_divides_what_it_shards(cfg: ModelConfig, tp: int) -> None:
    p = count_params(cfg)
    # Replicated on every tp rank: the norms (and the final norm); the rest splits over tp.
    replicated = p.layers * p.norms + p.final_norm
    one = training_memory(_setup(cfg)).params_on_gpu
    split = training_memory(_setup(cfg, tp=tp)).params_on_gpu
    assert split - replicated == pytest.approx((one - replicated) / tp, rel=1e-12)


@given(small_models, st.sampled_from([2, 4]))
def test_pp_first_stage_holds_ceil_l_over_pp_layers_and_the_embedding(
    cfg: ModelConfig, pp: int
) -> None:
    cfg = replace(cfg, layers=max(cfg.layers, pp))
    p = count_params(cfg)
    report = training_memory(_setup(cfg, pp=pp))
    layers = -(-cfg.layers // pp)
    assert report.layers_in_stage == layers
    assert report.params_on_gpu == layers * p.per_layer + p.embedding


@settings(max_examples=30, deadline=None)
@given(st.floats(2.5e9, 200e9))
def test_largest_micro_batch_is_maximal(gpu_bytes: float) -> None:
    base = TrainingSetup(
        PRESETS["llama2-7b"],
        Parallelism(dp=8, zero_stage=3),
        ActivationSetup(seq_len=4096, micro_batch=1, flash_attention=True),
    )
    mb = verdict(base, gpu_bytes).largest_micro_batch

    def fits(micro_batch: int) -> bool:
        acts = replace(base.activations, micro_batch=micro_batch)
        return training_memory(replace(base, activations=acts)).gpu_bytes <= gpu_bytes

    assert mb == 0 or fits(mb)
    assert mb == MAX_MICRO_BATCH or not fits(mb + 1)


def test_verdict_headroom() -> None:
    setup = tiny_setup()
    used = training_memory(setup).gpu_bytes
    assert verdict(setup, used + 5).headroom_bytes == 5
    assert not verdict(setup, used - 1).fits
    assert verdict(setup, 1.0).largest_micro_batch == 0


def test_memory_vs_dp_points() -> None:
    setup = tiny_setup(zero_stage=3)
    points = memory_vs_dp(setup, [1, 2, 4])
    assert [dp for dp, _ in points] == [1, 2, 4]
    for dp, gpu_bytes in points:
        one = training_memory(replace(setup, parallel=Parallelism(dp=dp, zero_stage=3)))
        assert gpu_bytes == one.gpu_bytes


def test_memory_vs_dp_leaves_out_degrees_expert_parallelism_cannot_use() -> None:
    setup = TrainingSetup(
        PRESETS["mixtral-8x7b"],
        Parallelism(dp=8, ep=8),
        ActivationSetup(seq_len=512, micro_batch=1),
    )
    assert [dp for dp, _ in memory_vs_dp(setup, [1, 4, 8, 16])] == [8, 16]


@pytest.mark.parametrize(
    ("parallel", "message"),
    [
        (Parallelism(dp=0), "dp"),
        (Parallelism(zero_stage=4), "zero_stage"),
        (Parallelism(pp=3), "pp"),
        (Parallelism(ep=2, dp=2), "mixture-of-experts"),
    ],
)
def test_rejects_impossible_setups(parallel: Parallelism, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        training_memory(TrainingSetup(TINY, parallel, SHORT))


def test_measured_terms_are_what_a_gpu_reports_beyond_the_textbook() -> None:
    # One stage, tp 2 and dp 4 on a 32k vocabulary: the loss's temporaries, 14 - 4 bytes per
    # logit of 2 x 4096 tokens over 32,000 / 2 vocabulary entries; two communicators (tp, dp);
    # the allocator's 10% over everything else.
    cfg = PRESETS["llama2-7b"]
    setup = TrainingSetup(
        model=cfg,
        parallel=Parallelism(dp=4, tp=2),
        activations=ActivationSetup(seq_len=4096, micro_batch=2, tp=2, sp=True),
        overhead_bytes=0.6e9,
    )
    textbook = training_memory(setup)
    measured = training_memory(replace(setup, measured=MeasuredTerms(14, 0.2e9, 0.1)))
    extra = {t.key: t.gpu_bytes for t in measured.terms[len(textbook.terms) :]}
    assert extra["loss"] == pytest.approx(10 * 2 * 4096 * 32000 / 2)
    assert extra["nccl"] == pytest.approx(2 * 0.2e9)
    allocated = textbook.gpu_bytes + extra["loss"] + extra["nccl"]
    assert extra["allocator"] == pytest.approx(0.1 * allocated)
    assert measured.gpu_bytes == pytest.approx(1.1 * allocated)
    # With a pipeline the first stage, which this report shows, holds no loss.
    piped = replace(setup, parallel=Parallelism(dp=2, tp=2, pp=2),
                     measured=MeasuredTerms(14, 0.2e9, 0.1))  # fmt: skip
    keys = [t.key for t in training_memory(piped).terms]
    assert "loss" not in keys and keys[-2:] == ["nccl", "allocator"]
