"""Parameter counts against published figures, hand derivations and invariants."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.model import (
    PRESETS,
    PUBLISHED_PARAMS,
    ModelConfig,
    attention_params_per_tp_rank,
    count_params,
    from_hf_config,
)

# Presets whose published figure is the exact Hugging Face model.num_parameters() count.
EXACT = [slug for slug, (count, _) in PUBLISHED_PARAMS.items() if isinstance(count, int)]


def test_every_preset_has_a_published_figure_with_a_citation() -> None:
    assert set(PUBLISHED_PARAMS) == set(PRESETS)
    for slug, (count, source) in PUBLISHED_PARAMS.items():
        assert count > 0, slug
        assert source.strip(), slug
    required = {
        "gpt3-175b",
        "llama2-7b",
        "llama2-13b",
        "llama2-70b",
        "llama3-8b",
        "llama3-70b",
        "llama3-405b",
        "mixtral-8x7b",
    }
    assert required <= set(PRESETS)


@pytest.mark.parametrize("slug", EXACT)
def test_preset_matches_hugging_face_exact_count(slug: str) -> None:
    # The Hub's model.num_parameters() figures, e.g. meta-llama/Llama-2-7b-hf 6,738,415,616,
    # meta-llama/Llama-3.1-405B 405,853,388,800, mistralai/Mixtral-8x7B-v0.1 46,702,792,704;
    # each cited in PUBLISHED_PARAMS.
    assert count_params(PRESETS[slug]).total == PUBLISHED_PARAMS[slug][0]


def test_gpt3_within_half_a_percent_of_175_billion() -> None:
    # Brown et al. 2020 (arXiv:2005.14165), Table 2.1: GPT-3 175B has n_params 175.0B.
    assert PUBLISHED_PARAMS["gpt3-175b"][0] == 175.0e9
    total = count_params(PRESETS["gpt3-175b"]).total
    assert abs(total - 175.0e9) / 175.0e9 < 0.005


def test_gpt3_by_hand() -> None:
    # Per layer: attention 4h^2 + 4h (Q, K, V, O and their biases), MLP 8h^2 + 4h + h
    # (h x 4h and 4h x h, biases 4h and h), two LayerNorms 4h: 12h^2 + 13h in all.
    h = 12288
    per_layer = 12 * h * h + 13 * h  # 1,812,099,072
    # 96 layers; token and position embeddings (50257 + 2048) * h; final LayerNorm 2h;
    # output tied to the token embedding.
    total = 96 * per_layer + (50257 + 2048) * h + 2 * h
    assert per_layer == 1_812_099_072
    assert total == 174_604_259_328
    assert count_params(PRESETS["gpt3-175b"]).total == total


def test_mixtral_active_parameters_match_mistral_announcement() -> None:
    # Mistral AI, "Mixtral of experts" (mistral.ai/news/mixtral-of-experts, Dec 2023):
    # "46.7B total parameters but only uses 12.9B parameters per token".
    counts = count_params(PRESETS["mixtral-8x7b"])
    assert abs(counts.active - 12.9e9) / 12.9e9 < 0.01
    assert abs(counts.total - 46.7e9) / 46.7e9 < 0.01
    # One SwiGLU expert is 3 * 4096 * 14336; a token skips 6 of the 8 in each of 32 layers.
    one_expert = 3 * 4096 * 14336
    assert counts.one_expert == one_expert
    assert counts.active == 46_702_792_704 - 32 * 6 * one_expert == 12_879_925_248


def test_small_gqa_swiglu_model_by_hand() -> None:
    # L=2, h=8, a=2 query heads of d=4, 1 key/value head, f=16, V=10; SwiGLU, RMSNorm,
    # no biases, untied output.
    cfg = ModelConfig(layers=2, hidden=8, heads=2, kv_heads=1, ffn_hidden=16, vocab=10)
    counts = count_params(cfg)
    assert counts.attention == 8 * 8 + 8 * 4 + 8 * 4 + 8 * 8 == 192  # Q, K, V, O
    assert counts.mlp == 3 * 8 * 16 == 384  # gate, up, down
    assert counts.norms == 2 * 8 == 16  # two RMSNorm scales
    assert counts.per_layer == 192 + 384 + 16 == 592
    assert counts.embedding == counts.lm_head == 10 * 8 == 80
    assert counts.final_norm == 8
    assert counts.positions == counts.experts == counts.router == 0
    assert counts.total == 80 + 2 * 592 + 8 + 80 == 1352


def test_small_gpt_style_model_by_hand() -> None:
    # L=1, h=4, a=2, f=16, V=10, 6 learned positions; GeLU MLP, LayerNorm, biases, tied.
    cfg = ModelConfig(
        layers=1,
        hidden=4,
        heads=2,
        kv_heads=2,
        ffn_hidden=16,
        vocab=10,
        ffn_type="gelu",
        norm="layernorm",
        tied_embeddings=True,
        attention_bias=True,
        mlp_bias=True,
        learned_positions=6,
    )
    counts = count_params(cfg)
    assert counts.attention == 4 * (4 * 4) + 4 * 4 == 80  # 4 matrices, 4 bias vectors
    assert counts.mlp == 2 * 4 * 16 + 16 + 4 == 148
    assert counts.norms == 2 * (2 * 4) == 16
    assert counts.positions == 6 * 4 == 24
    assert counts.lm_head == 0
    assert counts.total == 40 + 24 + (80 + 148 + 16) + 8 == 316


# meta-llama/Llama-2-7b-hf config.json
LLAMA2_7B_CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 11008,
    "max_position_embeddings": 4096,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "transformers_version": "4.31.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}

# openai-community/gpt2 config.json (the keys that shape the model)
GPT2_CONFIG: dict[str, Any] = {
    "activation_function": "gelu_new",
    "architectures": ["GPT2LMHeadModel"],
    "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_inner": None,
    "n_layer": 12,
    "n_positions": 1024,
    "vocab_size": 50257,
}

# mistralai/Mixtral-8x7B-v0.1 config.json
MIXTRAL_CONFIG: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1e6,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}


def test_llama2_7b_config_json_reads_as_the_preset() -> None:
    cfg = from_hf_config(LLAMA2_7B_CONFIG, name="Llama 2 7B")
    assert cfg == PRESETS["llama2-7b"]
    assert count_params(cfg).total == 6_738_415_616


def test_gpt2_config_json() -> None:
    # n_inner null means 4h; n_positions learned rows; output tied (PretrainedConfig default).
    cfg = from_hf_config(GPT2_CONFIG)
    assert (cfg.ffn_hidden, cfg.learned_positions, cfg.tied_embeddings) == (3072, 1024, True)
    assert (cfg.ffn_type, cfg.norm) == ("gelu", "layernorm")
    # openai-community/gpt2: model.num_parameters() == 124,439,808.
    assert count_params(cfg).total == 124_439_808


def test_gpt2_xl_config_json_reads_as_the_preset() -> None:
    data = GPT2_CONFIG | {"n_embd": 1600, "n_head": 25, "n_layer": 48}
    assert from_hf_config(data, name="GPT-2 XL") == PRESETS["gpt2-xl"]


def test_gpt_neox_config_json() -> None:
    # EleutherAI/pythia-70m config.json; model.num_parameters() == 70,426,624.
    data = {
        "model_type": "gpt_neox",
        "hidden_act": "gelu",
        "hidden_size": 512,
        "intermediate_size": 2048,
        "max_position_embeddings": 2048,
        "num_attention_heads": 8,
        "num_hidden_layers": 6,
        "rotary_pct": 0.25,
        "tie_word_embeddings": False,
        "use_parallel_residual": True,
        "vocab_size": 50304,
    }
    cfg = from_hf_config(data)
    assert cfg.learned_positions == 0  # rotary
    assert count_params(cfg).total == 70_426_624


def test_mixtral_config_json_reads_as_the_preset() -> None:
    cfg = from_hf_config(MIXTRAL_CONFIG, name="Mixtral 8x7B")
    assert cfg == PRESETS["mixtral-8x7b"]


def test_qwen2_biases_on_qkv_only() -> None:
    # Qwen/Qwen2-72B config.json. Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False;
    # the Hub count 72,706,203,648 holds only with exactly those biases.
    data = {
        "model_type": "qwen2",
        "hidden_act": "silu",
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "num_attention_heads": 64,
        "num_hidden_layers": 80,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
        "vocab_size": 152064,
    }
    cfg = from_hf_config(data, name="Qwen2 72B")
    assert cfg == PRESETS["qwen2-72b"]
    assert count_params(cfg).attention == 2 * 8192 * 8192 + 2 * 8192 * 1024 + 8192 + 2 * 1024


def test_explicit_head_dim_is_used() -> None:
    data = LLAMA2_7B_CONFIG | {"head_dim": 64}
    counts = count_params(from_hf_config(data))
    assert counts.attention == 4 * 4096 * 32 * 64


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"hidden_size": None}, "hidden_size"),
        ({"num_hidden_layers": "32"}, "num_hidden_layers"),
        ({"num_attention_heads": 0}, "num_attention_heads"),
        ({"vocab_size": True}, "vocab_size"),
        ({"intermediate_size": 11008.5}, "intermediate_size"),
        ({"num_key_value_heads": 5}, "num_key_value_heads"),
        ({"hidden_size": 4097}, "hidden_size"),
        ({"head_dim": -1}, "head_dim"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ({"model_type": "falcon"}, "model_type"),
        ({"hidden_act": "relu", "model_type": None}, "hidden_act"),
    ],
)
def test_invalid_llama_config_names_the_key(change: dict[str, Any], key: str) -> None:
    data = {k: v for k, v in (LLAMA2_7B_CONFIG | change).items() if v is not None}
    with pytest.raises(ValueError, match=f"'{key}'"):
        from_hf_config(data)


def test_missing_key_message() -> None:
    data = {k: v for k, v in LLAMA2_7B_CONFIG.items() if k != "hidden_size"}
    with pytest.raises(ValueError, match=r"^config.json: missing 'hidden_size'$"):
        from_hf_config(data)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"num_local_experts": None}, "num_local_experts"),
        ({"num_experts_per_tok": None}, "num_experts_per_tok"),
        ({"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ],
)
def test_invalid_mixtral_config_names_the_key(change: dict[str, Any], key: str) -> None:
    data = {k: v for k, v in (MIXTRAL_CONFIG | change).items() if v is not None}
    with pytest.raises(ValueError, match=f"'{key}'"):
        from_hf_config(data)


def test_gpt2_config_without_positions_names_the_key() -> None:
    data = {k: v for k, v in GPT2_CONFIG.items() if k != "n_positions"}
    with pytest.raises(ValueError, match="'n_positions'"):
        from_hf_config(data)


def test_config_json_that_is_not_an_object() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        from_hf_config([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"heads": 0}, "heads"),
        ({"layers": -1}, "layers"),
        ({"kv_heads": 3}, "kv_heads"),
        ({"experts": 4, "top_k": 5}, "top_k"),
    ],
)
def test_count_params_rejects_impossible_shapes(change: dict[str, int], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        count_params(replace(PRESETS["llama2-7b"], **change))


@st.composite
def configs(draw: st.DrawFn, moe: bool | None = None) -> ModelConfig:
    kv_heads = draw(st.integers(1, 8))
    heads = kv_heads * draw(st.integers(1, 8))
    if moe is None:
        experts = draw(st.integers(1, 8))
    else:
        experts = draw(st.integers(2, 8)) if moe else 1
    return ModelConfig(
        layers=draw(st.integers(1, 8)),
        hidden=heads * draw(st.integers(1, 32)),
        heads=heads,
        kv_heads=kv_heads,
        ffn_hidden=draw(st.integers(1, 256)),
        vocab=draw(st.integers(1, 1000)),
        ffn_type=draw(st.sampled_from(["gelu", "swiglu"])),
        norm=draw(st.sampled_from(["layernorm", "rmsnorm"])),
        tied_embeddings=draw(st.booleans()),
        attention_bias=draw(st.booleans()),
        mlp_bias=draw(st.booleans()),
        learned_positions=draw(st.integers(0, 64)),
        experts=experts,
        # MoE draws keep at least one expert a token skips.
        top_k=draw(st.integers(1, experts - 1)) if experts > 1 else 1,
        shared_experts=draw(st.integers(0, 2)),
    )


@given(configs())
def test_total_grows_with_layers(cfg: ModelConfig) -> None:
    deeper = count_params(replace(cfg, layers=cfg.layers + 1))
    counts = count_params(cfg)
    assert deeper.total > counts.total
    assert deeper.total - counts.total == counts.per_layer


@given(configs())
def test_gqa_never_has_more_parameters_than_mha(cfg: ModelConfig) -> None:
    mha = count_params(replace(cfg, kv_heads=cfg.heads))
    gqa = count_params(cfg)
    assert gqa.total <= mha.total
    # Each K and V projection drops (heads - kv_heads) * d columns (and bias entries).
    dropped = (cfg.heads - cfg.kv_heads) * cfg.dim_per_head
    per_matrix = cfg.hidden * dropped + (dropped if cfg.attention_bias else 0)
    assert mha.total - gqa.total == cfg.layers * 2 * per_matrix


@given(configs())
def test_tying_removes_exactly_the_output_projection(cfg: ModelConfig) -> None:
    untied = count_params(replace(cfg, tied_embeddings=False)).total
    tied = count_params(replace(cfg, tied_embeddings=True)).total
    assert untied - tied == cfg.vocab * cfg.hidden


@given(configs(moe=False))
def test_dense_model_uses_every_parameter(cfg: ModelConfig) -> None:
    counts = count_params(cfg)
    assert counts.active == counts.total
    assert counts.experts == counts.one_expert == counts.router == 0


@given(configs(moe=True))
def test_moe_token_uses_fewer_parameters_than_the_model_holds(cfg: ModelConfig) -> None:
    counts = count_params(cfg)
    assert counts.mlp == 0
    assert counts.experts == cfg.experts * counts.one_expert
    assert counts.active < counts.total
    skipped = (cfg.experts - cfg.top_k) * counts.one_expert
    assert counts.total - counts.active == cfg.layers * skipped


def test_kv_heads_are_replicated_when_tp_exceeds_them() -> None:
    # Llama 3 70B: 64 query heads, 8 KV heads of 128, hidden 8192. At tp = 16 each rank keeps
    # one KV head (Megatron-Core allows query groups that divide tp): K and V are replicated
    # twice, Q and the output projection split 16 ways.
    cfg = PRESETS["llama3-70b"]
    q_and_o = 2 * 8192 * 64 * 128
    k_and_v = 2 * 8192 * 8 * 128
    assert attention_params_per_tp_rank(cfg, 8) == (q_and_o + k_and_v) / 8
    assert attention_params_per_tp_rank(cfg, 16) == q_and_o / 16 + k_and_v / 8
    with pytest.raises(ValueError, match="divide one another"):
        attention_params_per_tp_rank(cfg, 3)
