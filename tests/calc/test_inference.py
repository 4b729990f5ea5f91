"""Inference memory: KV cache and weights against hand derivations and published figures."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.gpus import GPUS
from app.calc.inference import (
    InferenceSetup,
    inference_memory,
    kv_bytes_per_token,
    kv_heads_per_gpu,
    memory_vs_batch,
    mla_kv_elements_per_token,
)
from app.calc.model import PRESETS, ModelConfig

LLAMA2_70B = PRESETS["llama2-70b"]
H100 = GPUS["h100-80gb"].memory_bytes

# OPT-13B (Zhang et al. 2022, arXiv:2205.01068, Table 1: 40 layers, 40 heads, d_model 5120).
OPT_13B = ModelConfig(
    layers=40, hidden=5120, heads=40, kv_heads=40, ffn_hidden=4 * 5120, vocab=50272,
    ffn_type="gelu", norm="layernorm", tied_embeddings=True, attention_bias=True,
    mlp_bias=True, learned_positions=2050, name="OPT-13B",
)  # fmt: skip


def test_llama2_70b_kv_per_token_gqa_vs_mha() -> None:
    # 2 (K and V) x 80 layers x 8 KV heads x 128 dims x 2 bytes (bf16) = 327,680 B.
    assert kv_bytes_per_token(80, 8, 128, 2) == 2 * 80 * 8 * 128 * 2 == 327_680
    report = inference_memory(InferenceSetup(model=LLAMA2_70B, tp=1, gpu_memory_bytes=1e12))
    assert report.kv_bytes_per_token_model == 327_680
    # Were it MHA, 64 KV heads: 2 x 80 x 64 x 128 x 2 = 2,621,440 B, 8x more.
    mha = replace(LLAMA2_70B, kv_heads=64)
    mha_report = inference_memory(InferenceSetup(model=mha, tp=1, gpu_memory_bytes=1e12))
    assert mha_report.kv_bytes_per_token_model == 2_621_440 == 8 * 327_680


def test_pagedattention_opt_13b_800_kb_per_token() -> None:
    # Kwon et al. 2023, arXiv:2309.06180, Section 3: "the KV cache of a single token demands
    # 800 KB of space, calculated as 2 (key and value vectors) x 5120 (hidden state size) x 40
    # (number of layers) x 2 (bytes per FP16)" (their KB is 1024 B) ... "as much as 1.6 GB"
    # for 2048 tokens.
    report = inference_memory(
        InferenceSetup(model=OPT_13B, kv_dtype="fp16", context=2048, gpu_memory_bytes=1e12)
    )
    assert report.kv_bytes_per_token_model == 2 * 5120 * 40 * 2 == 800 * 1024
    assert report.term("kv_cache").bytes_ == 819_200 * 2048
    assert round(report.term("kv_cache").bytes_ / 2**30, 1) == 1.6  # 1.5625 GiB


def test_llama2_7b_bf16_weights() -> None:
    # Exact count 6,738,415,616 (Hugging Face meta-llama/Llama-2-7b-hf) x 2 bytes.
    report = inference_memory(InferenceSetup(model=PRESETS["llama2-7b"], tp=1))
    assert report.total_params == 6_738_415_616
    assert report.term("weights").bytes_ == 13_476_831_232
    assert f"{report.term('weights').bytes_ / 1e9:.2f}" == "13.48"


@pytest.mark.parametrize(
    ("dtype", "bytes_"), [("bf16", 2), ("fp16", 2), ("fp8", 1), ("int8", 1), ("int4", 0.5)]
)
def test_weight_dtypes(dtype: str, bytes_: float) -> None:
    report = inference_memory(InferenceSetup(model=PRESETS["llama2-7b"], weight_dtype=dtype))
    assert report.term("weights").bytes_ == 6_738_415_616 * bytes_


@pytest.mark.parametrize(("tp", "heads"), [(1, 8), (2, 4), (4, 2), (8, 1), (16, 1), (32, 1)])
def test_kv_heads_per_gpu_replicates_below_one(tp: int, heads: int) -> None:
    # vLLM ModelConfig.get_num_kv_heads: max(1, total_num_kv_heads // tensor_parallel_size).
    assert kv_heads_per_gpu(8, tp) == heads
    report = inference_memory(InferenceSetup(model=LLAMA2_70B, tp=tp, gpu_memory_bytes=1e12))
    assert report.kv_bytes_per_token_gpu == 2 * 80 * heads * 128 * 2
    assert report.term("weights").bytes_ == 68_976_648_192 * 2 / tp


def test_default_setup_by_hand() -> None:
    # Llama 2 70B, bf16, t = 4, s = 4096, b = 16, 1 GB overhead, 0.9 of an H100's 81,559 MiB.
    setup = InferenceSetup(model=LLAMA2_70B, tp=4, context=4096, batch=16,
                           overhead_bytes=1e9, gpu_memory_bytes=H100, utilisation=0.9)  # fmt: skip
    report = inference_memory(setup)
    weights = 68_976_648_192 * 2 / 4  # 34.49 GB
    per_token = 2 * 80 * 2 * 128 * 2  # 2 KV heads per GPU: 81,920 B
    kv = per_token * 4096 * 16  # 5.37 GB
    assert report.term("weights").bytes_ == weights
    assert report.term("kv_cache").bytes_ == kv
    assert report.total_bytes == weights + kv + 1e9
    budget = 0.9 * 81_559 * 2**20
    assert report.budget_bytes == budget and report.fits
    free = budget - weights - 1e9
    assert report.largest_batch == math.floor(free / (per_token * 4096)) == 123
    assert report.largest_context == math.floor(free / (per_token * 16)) == 31_647


def test_nothing_fits_gives_zero() -> None:
    report = inference_memory(InferenceSetup(model=LLAMA2_70B, tp=1, gpu_memory_bytes=H100))
    assert not report.fits and report.largest_batch == 0 and report.largest_context == 0


@pytest.mark.parametrize(
    ("tp", "message"),
    [(3, "must divide the 64 attention heads"), (0, "at least 1")],
)
def test_impossible_tensor_parallel(tp: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        inference_memory(InferenceSetup(model=LLAMA2_70B, tp=tp))


def test_kv_heads_neither_divisible_nor_multiple() -> None:
    model = replace(LLAMA2_70B, heads=48, kv_heads=6, hidden=6144)
    with pytest.raises(ValueError, match="KV heads"):
        inference_memory(InferenceSetup(model=model, tp=4))


def test_memory_vs_batch_is_linear() -> None:
    setup = InferenceSetup(model=LLAMA2_70B, tp=8, context=1000, gpu_memory_bytes=H100)
    (b1, m1), (b2, m2), (b4, m4) = memory_vs_batch(setup, [1, 2, 4])
    assert m2 - m1 == (m4 - m2) / 2 == 2 * 80 * 1 * 128 * 2 * 1000


tps = st.sampled_from([1, 2, 4, 8, 16, 32, 64])


@given(tp=tps, context=st.integers(1, 200_000), batch=st.integers(1, 512))
def test_largest_batch_and_context_are_tight(tp: int, context: int, batch: int) -> None:
    setup = InferenceSetup(model=LLAMA2_70B, tp=tp, context=context, batch=batch,
                           gpu_memory_bytes=H100)  # fmt: skip
    report = inference_memory(setup)
    for field, value in (("batch", report.largest_batch), ("context", report.largest_context)):
        if value:
            assert inference_memory(replace(setup, **{field: value})).fits
        assert not inference_memory(replace(setup, **{field: value + 1})).fits
    assert report.fits == (batch <= report.largest_batch)


@given(tp=tps, kv_heads=st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_replication_never_loses_heads(tp: int, kv_heads: int) -> None:
    model = replace(LLAMA2_70B, kv_heads=kv_heads)
    report = inference_memory(InferenceSetup(model=model, tp=tp))
    # Over t GPUs at least every head is held; exactly once unless heads are replicated.
    held = report.kv_bytes_per_token_gpu * tp
    assert held >= report.kv_bytes_per_token_model
    assert (held == report.kv_bytes_per_token_model) == (kv_heads >= tp)


@given(small=st.integers(1, 10_000), extra=st.integers(0, 10_000))
def test_memory_grows_with_batch_and_context(small: int, extra: int) -> None:
    setup = InferenceSetup(model=PRESETS["llama3-8b"], context=small, batch=small)
    base = inference_memory(setup).total_bytes
    assert inference_memory(replace(setup, batch=small + extra)).total_bytes >= base
    assert inference_memory(replace(setup, context=small + extra)).total_bytes >= base


# DeepSeek-V3's attention shape (Hugging Face deepseek-ai/DeepSeek-V3 config.json: 61 layers,
# hidden 7168, 128 heads of 128 (qk_nope_head_dim, v_head_dim), kv_lora_rank 512,
# qk_rope_head_dim 64), served from its nominal 671B parameters (arXiv:2412.19437, abstract).
DEEPSEEK_V3 = ModelConfig(
    layers=61, hidden=7168, heads=128, kv_heads=128, head_dim=128, ffn_hidden=18432,
    vocab=129280, name="DeepSeek-V3",
)  # fmt: skip


def _mla(**fields: object) -> InferenceSetup:
    base = {"model": DEEPSEEK_V3, "attention": "mla", "params": 671e9, "weight_dtype": "fp8"}
    return InferenceSetup(**{**base, **fields})  # type: ignore[arg-type]


def test_mla_deepseek_v3_caches_576_elements_per_layer() -> None:
    # (512 + 64) x 61 = 35,136 elements; x 2 bytes (bf16) = 70,272 B = 68.625 KiB per token.
    # "Insights into DeepSeek-V3" (Zhao et al., ISCA'25, arXiv:2505.09343), Table 1: DeepSeek-V3
    # (MLA) 70.272 KB per token, against Qwen-2.5 72B (GQA) 327.680 KB and LLaMA-3.1 405B (GQA)
    # 516.096 KB.
    assert mla_kv_elements_per_token(61, 512, 64) == 35_136
    report = inference_memory(_mla(tp=1, gpu_memory_bytes=1e13))
    assert report.kv_bytes_per_token_model == 70_272 == 61 * 576 * 2
    assert report.kv_bytes_per_token_model / 1024 == 68.625
    qwen = inference_memory(InferenceSetup(model=PRESETS["qwen2-72b"], gpu_memory_bytes=1e12))
    llama = inference_memory(InferenceSetup(model=PRESETS["llama3-405b"], gpu_memory_bytes=1e13))
    assert qwen.kv_bytes_per_token_model == 327_680
    assert llama.kv_bytes_per_token_model == 516_096


def test_deepseek_v2_table_1_mla_equals_gqa_with_2_25_groups() -> None:
    # DeepSeek-V2 (arXiv:2405.04434), Table 1 and Section 2.1.4: MLA caches (d_c + d_h^R) l
    # elements per token, with d_c = 4 d_h and d_h^R = d_h / 2 "about 9/2 d_h l", "equal to GQA
    # with only 2.25 groups"; MHA caches 2 n_h d_h l. DeepSeek-V2: l = 60, n_h = 128, d_h = 128
    # (Section 3.1.2).
    d_h, layers, heads = 128, 60, 128
    mla = mla_kv_elements_per_token(layers, 4 * d_h, d_h // 2)
    assert mla == 34_560 == 9 / 2 * d_h * layers == 2 * 2.25 * d_h * layers
    mha = kv_bytes_per_token(layers, heads, d_h, 1)  # elements: one byte each
    assert mha == 1_966_080
    assert round(mha / mla, 1) == 56.9


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_mla_latent_is_whole_on_every_tensor_parallel_rank(tp: int) -> None:
    # vLLM MLAAttention.get_kv_cache_spec: MLAAttentionSpec(num_kv_heads=1, head_size=
    # kv_lora_rank + qk_rope_head_dim) whatever the TP size; SGLang MLATokenToKVPool likewise.
    report = inference_memory(_mla(tp=tp, gpu_memory_bytes=1e13))
    assert report.kv_bytes_per_token_gpu == 70_272
    assert report.kv_heads_per_gpu == 1
    assert report.kv_replicated == (tp > 1)
    assert report.term("weights").bytes_ == 671e9 / tp


def test_deepseek_v3_fp8_on_eight_h200s_by_hand() -> None:
    # Weights 671e9 x 1 B / 8 = 83.875 GB per GPU; budget 0.9 x 143,771 MiB; 1 GB overhead.
    setup = _mla(tp=8, context=4096, batch=16, gpu_memory_bytes=GPUS["h200"].memory_bytes)
    report = inference_memory(setup)
    free = 0.9 * 143_771 * 2**20 - 83.875e9 - 1e9
    assert report.term("weights").bytes_ == 83.875e9
    assert report.term("kv_cache").bytes_ == 70_272 * 4096 * 16
    assert report.free_for_kv_bytes == free
    assert report.tokens_that_fit == math.floor(free / 70_272) == 722_967
    assert report.largest_batch == 176


def test_vllm_fp8_ds_mla_bytes_per_token_given() -> None:
    # vLLM MLAAttentionSpec.real_page_size_bytes for cache_dtype_str "fp8_ds_mla": 656 B per
    # token and layer (vllm/v1/kv_cache_interface.py at 001cabc1) = 512 fp8 latent values
    # + 4 fp32 scales (16 B) + 64 RoPE values in bf16 (128 B).
    assert 512 + 4 * 4 + 64 * 2 == 656
    report = inference_memory(_mla(tp=8, kv_bytes_per_token=656 * 61, gpu_memory_bytes=1e13))
    assert report.kv_bytes_per_token_gpu == 40_016 == report.kv_bytes_per_token_model


def test_nominal_70b_fp8_on_two_h100s_leaves_room_for_the_cache() -> None:
    # "70B in fp8 on 2 GPUs with TP 2": 70e9 x 1 B / 2 = 35 GB of weights per GPU; of
    # 0.9 x 81,559 MiB less 1 GB overhead, 40.97 GB is left. At Llama 2 70B's 327,680 B of KV per
    # token (8 KV heads, split 4 and 4), a GPU holds 163,840 B per token: 250,053 tokens.
    setup = InferenceSetup(model=LLAMA2_70B, weight_dtype="fp8", tp=2, params=70e9,
                           kv_bytes_per_token=327_680, gpu_memory_bytes=H100)  # fmt: skip
    report = inference_memory(setup)
    free = 0.9 * 81_559 * 2**20 - 35e9 - 1e9
    assert report.term("weights").bytes_ == 35e9
    assert report.total_params == 70_000_000_000
    assert report.free_for_kv_bytes == free and f"{free / 1e9:.2f}" == "40.97"
    assert report.kv_bytes_per_token_gpu == 163_840
    assert report.tokens_that_fit == math.floor(free / 163_840) == 250_053
    assert report.largest_batch == 61  # at 4,096 tokens per sequence


def test_given_kv_size_follows_replication() -> None:
    # Given per-token bytes are split as the shape's KV heads are: 8 heads on t = 16 -> 1/8 each.
    setup = InferenceSetup(model=LLAMA2_70B, tp=16, kv_bytes_per_token=800, gpu_memory_bytes=H100)
    assert inference_memory(setup).kv_bytes_per_token_gpu == 100


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"params": 0}, "parameter count must be positive"),
        ({"kv_bytes_per_token": -1}, "KV bytes per token must be positive"),
        ({"attention": "mla", "kv_lora_rank": 0}, "kv_lora_rank"),
        ({"attention": "mla", "tp": 3}, "must divide the 64 attention heads"),
    ],
)
def test_bad_nominal_and_mla_inputs(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        inference_memory(InferenceSetup(model=LLAMA2_70B, **fields))


def test_mla_does_not_ask_kv_heads_to_split() -> None:
    # 6 KV heads cannot be split over 4 GPUs, but an MLA layer has no KV heads to split.
    model = replace(LLAMA2_70B, heads=48, kv_heads=6, hidden=6144)
    assert inference_memory(InferenceSetup(model=model, tp=4, attention="mla")).kv_replicated
