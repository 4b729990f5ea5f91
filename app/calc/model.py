"""A decoder-only transformer's shape, and how many parameters it has.

One module because some forty modules (app/calculators and app/quiz among them) import the
shape, its count, the presets and the Hugging Face config reader from here, and the presets
and the reader build the shape: a module of either would import this one and be re-exported
by it, a cycle.

Counting follows the weight matrices of the reference implementations: GPT-2/GPT-3
(Radford et al. 2019; Brown et al. 2020, arXiv:2005.14165, Section 2.1 and Table 2.1),
Llama (Touvron et al. 2023, arXiv:2302.13971 and arXiv:2307.09288), Mixtral (Jiang et al.
2024, arXiv:2401.04088) and their Hugging Face `transformers` modules (`LlamaAttention`,
`LlamaMLP`, `MixtralSparseMoeBlock`, `GPT2Block`, `GPTNeoXLayer`, `Qwen2Attention`).
Per layer, with h hidden, f the MLP width, a query heads, k key/value heads, d the head
dimension:

    attention   h*a*d (Q) + 2*h*k*d (K, V) + a*d*h (O)   + a*d + 2*k*d + h with biases
    MLP         2*h*f (GeLU: up, down) or 3*h*f (SwiGLU: gate, up, down)  + f + h with biases
    norms       2 per layer: LayerNorm 2h each (scale and bias), RMSNorm h each (scale)

plus the V*h token embedding, learned position rows (GPT-2/3 only), a final norm, and a
V*h output projection unless it is tied to the embedding. Rotary embeddings have no weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from app.calc.messages import N_, Message

FfnType = Literal["gelu", "swiglu"]  # 2 matrices (up, down) or 3 (gate, up, down)
NormType = Literal["layernorm", "rmsnorm"]  # LayerNorm has a bias (2h), RMSNorm does not (h)


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a decoder-only transformer. Field names follow the papers' symbols."""

    layers: int  # L
    hidden: int  # h (d_model)
    heads: int  # a (query heads)
    kv_heads: int  # = heads for MHA, 1 for MQA, in between for GQA
    ffn_hidden: int  # the MLP's inner width (4h for GPT-3; 11008 for Llama-2 7B)
    vocab: int  # V
    head_dim: int | None = None  # None: hidden // heads
    ffn_type: FfnType = "swiglu"
    norm: NormType = "rmsnorm"
    tied_embeddings: bool = False  # the output projection reuses the input embedding
    attention_bias: bool = False  # biases on Q, K, V and (see attention_out_bias) O
    mlp_bias: bool = False
    learned_positions: int = 0  # rows of a learned absolute position embedding (GPT-3: 2048)
    experts: int = 1  # MoE experts per layer; 1 = dense
    top_k: int = 1  # experts each token is routed to
    shared_experts: int = 0  # experts every token passes through (DeepSeek-style)
    name: str = "custom"
    # None: the output projection has a bias exactly when attention_bias is set. Qwen2 puts
    # biases on Q, K and V only (attention_bias=True, attention_out_bias=False).
    attention_out_bias: bool | None = None

    @property
    def dim_per_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads


@dataclass(frozen=True)
class ParamCount:
    """Parameters of one model, by part. Per-layer parts count one transformer block."""

    embedding: int  # V*h input embedding
    positions: int  # learned_positions*h (0 for RoPE models)
    attention: int  # per layer: Q, K, V, O projections (+ biases)
    mlp: int  # per layer dense MLP (0 if MoE)
    experts: int  # per layer, all routed experts together (0 if dense)
    one_expert: int  # per layer, one routed expert (0 if dense)
    shared_experts: int  # per layer, all shared experts together
    router: int  # per layer gate h*experts (0 if dense)
    norms: int  # per layer, the two norms
    final_norm: int
    lm_head: int  # V*h, 0 when tied
    layers: int
    top_k: int = 1  # routed experts each token passes through

    @property
    def per_layer(self) -> int:
        return (
            self.attention
            + self.mlp
            + self.experts
            + self.shared_experts
            + self.router
            + self.norms
        )

    @property
    def total(self) -> int:
        return (
            self.embedding
            + self.positions
            + self.layers * self.per_layer
            + self.final_norm
            + self.lm_head
        )

    @property
    def active(self) -> int:
        """Parameters one token passes through: routed experts replaced by top_k of them.

        Mixtral 8x7B: "46.7B total parameters but only uses 12.9B parameters per token"
        (Mistral AI, "Mixtral of experts", mistral.ai/news/mixtral-of-experts, Dec 2023).
        """
        return self.total - self.layers * (self.experts - self.top_k * self.one_expert)


def _check_config(cfg: ModelConfig) -> None:
    """Raise ValueError naming the first field that cannot describe a transformer."""
    for field in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "experts"):
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be at least 1, got {getattr(cfg, field)}")
    if cfg.head_dim is not None and cfg.head_dim < 1:
        raise ValueError(f"head_dim must be at least 1, got {cfg.head_dim}")
    if cfg.head_dim is None and cfg.hidden % cfg.heads:
        template = N_("hidden (%(hidden)s) must be a multiple of heads (%(heads)s)")
        raise ValueError(Message(template, hidden=cfg.hidden, heads=cfg.heads))
    if cfg.heads % cfg.kv_heads:
        template = N_("heads (%(heads)s) must be a multiple of kv_heads (%(kv_heads)s)")
        raise ValueError(Message(template, heads=cfg.heads, kv_heads=cfg.kv_heads))
    if cfg.learned_positions < 0 or cfg.shared_experts < 0:
        raise ValueError("learned_positions and shared_experts cannot be negative")
    if cfg.experts > 1 and not 1 <= cfg.top_k <= cfg.experts:
        raise ValueError(f"top_k must be between 1 and experts ({cfg.experts}), got {cfg.top_k}")


def _mlp_params(cfg: ModelConfig) -> int:
    """One MLP (or one expert): 2*h*f for GeLU, 3*h*f for SwiGLU (Shazeer 2020,
    arXiv:2002.05202), plus f biases per input-side matrix and h for the output one."""
    h, f = cfg.hidden, cfg.ffn_hidden
    if cfg.ffn_type == "swiglu":
        return 3 * h * f + (2 * f + h if cfg.mlp_bias else 0)
    return 2 * h * f + (f + h if cfg.mlp_bias else 0)


@lru_cache(maxsize=1024)  # frozen configs; the planner counts one model thousands of times
def count_params(cfg: ModelConfig) -> ParamCount:
    """Count a decoder-only transformer's parameters, part by part.

    The formulas are in the module docstring. Checked against the exact counts Hugging Face
    reports for Llama 2/3, Mistral, Mixtral, Qwen2 and GPT-2, and against GPT-3's 175.0B
    (Brown et al. 2020, Table 2.1); see PUBLISHED_PARAMS.
    """
    _check_config(cfg)
    h, d = cfg.hidden, cfg.dim_per_head
    q_width, kv_width = cfg.heads * d, cfg.kv_heads * d
    attention = 2 * h * q_width + 2 * h * kv_width
    if cfg.attention_bias:
        attention += q_width + 2 * kv_width
    out_bias = cfg.attention_bias if cfg.attention_out_bias is None else cfg.attention_out_bias
    if out_bias:
        attention += h
    one_mlp = _mlp_params(cfg)
    moe = cfg.experts > 1
    norm = 2 * h if cfg.norm == "layernorm" else h
    return ParamCount(
        embedding=cfg.vocab * h,
        positions=cfg.learned_positions * h,
        attention=attention,
        mlp=0 if moe else one_mlp,
        experts=cfg.experts * one_mlp if moe else 0,
        one_expert=one_mlp if moe else 0,
        shared_experts=cfg.shared_experts * one_mlp,
        router=h * cfg.experts if moe else 0,
        norms=2 * norm,
        final_norm=norm,
        lm_head=0 if cfg.tied_embeddings else cfg.vocab * h,
        layers=cfg.layers,
        top_k=cfg.top_k if moe else 1,
    )


def attention_params_per_tp_rank(cfg: ModelConfig, tp: int) -> float:
    """One layer's attention parameters on each of tp tensor-parallel ranks.

    Q and the output projection split tp ways. K and V split too while tp divides the KV
    heads; with more ranks than KV heads each rank keeps one whole KV head, so K and V are
    replicated tp / kv_heads times. Megatron-Core allows either (transformer_config.py: the
    query groups must be a multiple or a divisor of tp; attention.py replicates the KV heads;
    read at main@d98e8a64, 2026-08-22), as vLLM does at inference.
    """
    if cfg.kv_heads % tp and tp % cfg.kv_heads:
        raise ValueError(f"tp={tp} and {cfg.kv_heads} KV heads must divide one another")
    kv_width = cfg.kv_heads * cfg.dim_per_head
    kv = 2 * cfg.hidden * kv_width + (2 * kv_width if cfg.attention_bias else 0)
    replicas = max(cfg.kv_heads, tp) / cfg.kv_heads
    return (count_params(cfg).attention + (replicas - 1) * kv) / tp


def _llama(
    name: str, layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int
) -> ModelConfig:
    """Llama-family shape: SwiGLU, RMSNorm, RoPE, no biases, untied output projection."""
    return ModelConfig(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        ffn_hidden=ffn,
        vocab=vocab,
        name=name,
    )


# Shapes from each model's paper and Hugging Face config.json.
PRESETS: dict[str, ModelConfig] = {
    # Brown et al. 2020, Table 2.1: n_layers 96, d_model 12288, n_heads 96, d_head 128,
    # n_ctx 2048; Section 2.1: GPT-2's architecture (LayerNorm, biases, GeLU MLP of 4h,
    # learned positions, output tied to the 50257-token BPE embedding).
    "gpt3-175b": ModelConfig(
        layers=96,
        hidden=12288,
        heads=96,
        kv_heads=96,
        ffn_hidden=4 * 12288,
        vocab=50257,
        ffn_type="gelu",
        norm="layernorm",
        tied_embeddings=True,
        attention_bias=True,
        mlp_bias=True,
        learned_positions=2048,
        name="GPT-3 175B",
    ),
    # openai-community/gpt2-xl config.json: n_layer 48, n_embd 1600, n_head 25, n_positions 1024.
    "gpt2-xl": ModelConfig(
        layers=48,
        hidden=1600,
        heads=25,
        kv_heads=25,
        ffn_hidden=4 * 1600,
        vocab=50257,
        ffn_type="gelu",
        norm="layernorm",
        tied_embeddings=True,
        attention_bias=True,
        mlp_bias=True,
        learned_positions=1024,
        name="GPT-2 XL",
    ),
    "llama2-7b": _llama("Llama 2 7B", 32, 4096, 32, 32, 11008, 32000),
    "llama2-13b": _llama("Llama 2 13B", 40, 5120, 40, 40, 13824, 32000),
    "llama2-70b": _llama("Llama 2 70B", 80, 8192, 64, 8, 28672, 32000),
    "llama3-8b": _llama("Llama 3 8B", 32, 4096, 32, 8, 14336, 128256),
    "llama3-70b": _llama("Llama 3 70B", 80, 8192, 64, 8, 28672, 128256),
    "llama3-405b": _llama("Llama 3.1 405B", 126, 16384, 128, 8, 53248, 128256),
    "mistral-7b": _llama("Mistral 7B", 32, 4096, 32, 8, 14336, 32000),
    # mistralai/Mixtral-8x7B-v0.1 config.json: Mistral 7B's shape, 8 experts, top 2.
    "mixtral-8x7b": ModelConfig(
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn_hidden=14336,
        vocab=32000,
        experts=8,
        top_k=2,
        name="Mixtral 8x7B",
    ),
    # Qwen/Qwen2-72B config.json; Qwen2Attention has biases on q/k/v_proj, not o_proj.
    "qwen2-72b": ModelConfig(
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=8,
        ffn_hidden=29568,
        vocab=152064,
        attention_bias=True,
        attention_out_bias=False,
        name="Qwen2 72B",
    ),
}

_HF_COUNT = "Hugging Face {repo}: model.num_parameters() (safetensors total)"
# Llama 2's checkpoints also store each layer's rotary inv_freq buffer (head_dim / 2 = 64
# values), so their safetensors totals are layers x 64 above the parameters.
_HF_LLAMA2 = (
    "Hugging Face {repo}: model.num_parameters(); the safetensors total is {layers} x 64 more "
    "(each layer's rotary inv_freq buffer, stored in the checkpoint)"
)

# slug -> (published parameter count, where it is published).
PUBLISHED_PARAMS: dict[str, tuple[int | float, str]] = {
    "gpt3-175b": (
        175.0e9,
        "Brown et al. 2020, Language Models are Few-Shot Learners, arXiv:2005.14165, "
        "Table 2.1 (n_params 175.0B)",
    ),
    "gpt2-xl": (1_557_611_200, _HF_COUNT.format(repo="openai-community/gpt2-xl")),
    "llama2-7b": (6_738_415_616, _HF_LLAMA2.format(repo="meta-llama/Llama-2-7b-hf", layers=32)),
    "llama2-13b": (13_015_864_320, _HF_LLAMA2.format(repo="meta-llama/Llama-2-13b-hf", layers=40)),
    "llama2-70b": (68_976_648_192, _HF_LLAMA2.format(repo="meta-llama/Llama-2-70b-hf", layers=80)),
    "llama3-8b": (8_030_261_248, _HF_COUNT.format(repo="meta-llama/Meta-Llama-3-8B")),
    "llama3-70b": (70_553_706_496, _HF_COUNT.format(repo="meta-llama/Meta-Llama-3-70B")),
    "llama3-405b": (405_853_388_800, _HF_COUNT.format(repo="meta-llama/Llama-3.1-405B")),
    "mistral-7b": (7_241_732_096, _HF_COUNT.format(repo="mistralai/Mistral-7B-v0.1")),
    "mixtral-8x7b": (46_702_792_704, _HF_COUNT.format(repo="mistralai/Mixtral-8x7B-v0.1")),
    "qwen2-72b": (72_706_203_648, _HF_COUNT.format(repo="Qwen/Qwen2-72B")),
}

# Hugging Face model_type -> family. Gated families always have three MLP matrices
# (LlamaMLP: down(act(gate(x)) * up(x))), whatever hidden_act says; GPT families two.
_GATED = frozenset({"llama", "mistral", "mixtral", "qwen2"})
_GPT = frozenset({"gpt2", "gpt_neox"})
_GELU_ACTS = frozenset({"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "quick_gelu"})


def _get(data: Mapping[str, Any], *keys: str) -> Any:
    """The value of the first key present (None if none is)."""
    for key in keys:
        if key in data:
            return data[key]
    return None


def _positive_int(data: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    value = _get(data, *keys)
    if value is None:
        if default is not None:
            return default
        raise ValueError(f"config.json: missing {keys[0]!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        key = next(k for k in keys if k in data)
        raise ValueError(f"config.json: {key!r} must be a positive integer, got {value!r}")
    return value


def _flag(data: Mapping[str, Any], key: str, default: bool) -> bool:
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"config.json: {key!r} must be true or false, got {value!r}")
    return value


def from_hf_config(data: Mapping[str, Any], name: str = "custom") -> ModelConfig:
    """Read a Hugging Face config.json dict (Llama, Mistral, Mixtral, Qwen2, GPT-2, GPT-NeoX).

    Key names and defaults follow `transformers`' LlamaConfig, MistralConfig, MixtralConfig,
    Qwen2Config, GPT2Config (n_layer, n_embd, n_head, n_inner = None meaning 4h, n_positions
    learned positions, tied output by PretrainedConfig's default) and GPTNeoXConfig (rotary,
    biases, untied). Without a model_type, GPT-2 keys mean GPT-2, otherwise Llama-style keys
    are read and hidden_act picks the MLP. Raises ValueError naming the key for anything
    missing, malformed or unsupported.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"config.json: expected a JSON object, got {type(data).__name__}")
    model_type = data.get("model_type")
    if model_type is None:
        model_type = "gpt2" if "n_embd" in data or "n_layer" in data else None
    elif model_type not in _GATED | _GPT:
        supported = ", ".join(sorted(_GATED | _GPT))
        raise ValueError(f"config.json: 'model_type' {model_type!r} is not supported ({supported})")

    layers = _positive_int(data, "num_hidden_layers", "n_layer")
    hidden = _positive_int(data, "hidden_size", "n_embd")
    heads = _positive_int(data, "num_attention_heads", "n_head")
    kv_heads = _positive_int(data, "num_key_value_heads", default=heads)
    vocab = _positive_int(data, "vocab_size")
    # head_dim: null (older configs) means hidden // heads.
    head_dim = _positive_int(data, "head_dim") if data.get("head_dim") is not None else None
    if head_dim is None and hidden % heads:
        raise ValueError(
            f"config.json: 'hidden_size' ({hidden}) must be a multiple of "
            f"'num_attention_heads' ({heads}) unless 'head_dim' is given"
        )
    if heads % kv_heads:
        raise ValueError(
            f"config.json: 'num_attention_heads' ({heads}) must be a multiple of "
            f"'num_key_value_heads' ({kv_heads})"
        )
    if head_dim is not None and hidden % heads == 0 and head_dim == hidden // heads:
        head_dim = None  # the default spelled out: keep configs equal to the presets

    if model_type == "gpt2":
        return ModelConfig(
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            ffn_hidden=_positive_int(data, "n_inner", default=4 * hidden),
            vocab=vocab,
            head_dim=head_dim,
            ffn_type="gelu",
            norm="layernorm",
            tied_embeddings=_flag(data, "tie_word_embeddings", True),
            attention_bias=True,
            mlp_bias=True,
            learned_positions=_positive_int(data, "n_positions", "max_position_embeddings"),
            name=name,
        )

    ffn_hidden = _positive_int(data, "intermediate_size")
    if model_type == "gpt_neox":
        return ModelConfig(
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            ffn_hidden=ffn_hidden,
            vocab=vocab,
            head_dim=head_dim,
            ffn_type="gelu",
            norm="layernorm",
            tied_embeddings=_flag(data, "tie_word_embeddings", False),
            attention_bias=_flag(data, "attention_bias", True),
            mlp_bias=True,
            name=name,
        )

    act = data.get("hidden_act", "silu")
    if model_type in _GATED or act in ("silu", "swiglu"):
        ffn_type: FfnType = "swiglu"
    elif act in _GELU_ACTS:
        ffn_type = "gelu"
    else:
        raise ValueError(f"config.json: 'hidden_act' {act!r} is not supported (silu, swiglu, gelu)")

    experts = _positive_int(
        data,
        "num_local_experts",
        "n_routed_experts",
        default=None if model_type == "mixtral" else 1,
    )
    top_k = _positive_int(data, "num_experts_per_tok", default=None if experts > 1 else 1)
    if experts > 1 and top_k > experts:
        raise ValueError(
            f"config.json: 'num_experts_per_tok' ({top_k}) exceeds 'num_local_experts' ({experts})"
        )
    shared = data.get("n_shared_experts") or 0
    if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
        raise ValueError(
            f"config.json: 'n_shared_experts' must be a non-negative integer, got {shared!r}"
        )

    qwen2 = model_type == "qwen2"
    return ModelConfig(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn_hidden=ffn_hidden,
        vocab=vocab,
        head_dim=head_dim,
        ffn_type=ffn_type,
        norm="rmsnorm",
        tied_embeddings=_flag(data, "tie_word_embeddings", False),
        # Qwen2Attention hard-codes bias=True on q/k/v_proj and bias=False on o_proj.
        attention_bias=True if qwen2 else _flag(data, "attention_bias", False),
        mlp_bias=_flag(data, "mlp_bias", False),
        experts=experts,
        top_k=top_k if experts > 1 else 1,
        shared_experts=shared,
        name=name,
        attention_out_bias=False if qwen2 else None,
    )


# What a custom model must state; every other field has a sensible default.
REQUIRED_FOR_CUSTOM = ("layers", "hidden", "heads", "ffn_hidden", "vocab")


def model_with(
    preset: str, given: Mapping[str, Any], labels: Mapping[str, str] | None = None
) -> ModelConfig:
    """A preset's shape with each given field (None: keep the preset's) put in its place.

    `preset` "custom" starts from Llama 2 7B's defaults and needs REQUIRED_FOR_CUSTOM; its
    KV heads default to its heads (MHA). The result keeps the preset's name only while it
    still is that preset. `labels` names fields in the error message the way a form does.
    """
    overrides = {k: v for k, v in given.items() if v is not None}
    if preset == "custom":
        missing = [(labels or {}).get(n, n) for n in REQUIRED_FOR_CUSTOM if n not in overrides]
        if missing:
            fields = Message.join(", ", map(Message, missing))
            raise ValueError(Message(N_("a custom model needs %(fields)s"), fields=fields))
        overrides.setdefault("kv_heads", overrides["heads"])
    base = PRESETS.get(preset) or PRESETS["llama2-7b"]
    cfg = replace(base, **overrides)
    return cfg if cfg == base else replace(cfg, name="custom")
