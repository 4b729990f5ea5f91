r"""What one micro-batch's passes cost on one GPU, kernel by kernel (app.calc.performance):
a transformer layer's GEMMs at their shapes after the TP/CP/EP split, its attention core, its
memory-bound kernels and how many kernels it launches; and the same for the last stage's
output layer and loss and the first stage's embedding.

Shapes (Megatron-LM, Shoeybi et al. arXiv:1909.08053 Section 3; Korthikanti et al.
arXiv:2205.05198 Section 4.2.2 for sequence parallelism). A micro-batch of b sequences of s
tokens puts T = b s / cp tokens on each GPU; every GEMM has M = T rows (sequence parallelism
all-gathers them before the column-parallel GEMMs), and tp splits their other side:
QKV h -> (a + 2 a_kv) d / t, the output projection a d / t -> h, the MLP h -> f / t (two of
them, gate and up, for SwiGLU, run as one GEMM) and f / t -> h. A routed expert runs on the
T k ep / E tokens sent to it on average, its width split over tp as Megatron does.

Memory-bound work, forward, in values moved (read + written; 2 bytes each in bf16), with
h' = h / t under sequence parallelism and h otherwise:
- the two norms, 2 T h' each; the two residual adds, 3 T h' each;
- rotary embeddings on q and k, 2 T (a + a_kv) d / t (none with learned positions);
- the MLP's activation: GeLU 2 T f / t, SwiGLU 3 T f / t;
- dropout on the attention and MLP outputs, 2 T h' values and a 1-byte mask each;
- without flash attention, the scaled masked softmax and the dropout over the b a / t s^2 / cp
  scores: 2 + 3 values and a mask per score.
A backward pass moves twice the forward's bytes (a gradient read and written per value) and
runs twice its GEMM FLOPs (one GEMM for the input's gradient, one for the weight's).

The loss: the output projection h -> V / t (vocab-parallel), then cross-entropy over fp32
logits: cast (2 + 4 bytes), log-softmax (4 + 4), its backward (4 + 4 + 4) and the cast of the
gradient back (4 + 2): 32 bytes per logit element. Embedding: a gather of T h values forward,
a scatter-add backward.

Kernels per layer, forward: one per GEMM, one per memory-bound step above, one fused attention
kernel (four without: two batched GEMMs, softmax, dropout); backward twice as many. Context
parallelism's ring attention (Transformer Engine, attention/dot_product_attention/
context_parallel.py, AttnFuncWithCPAndKVP2P) runs one attention kernel per ring step, cp of
them, and corrects the softmax statistics and the output after each: 3 cp kernels for one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from app.calc.flops import attention_flops_per_token
from app.calc.model import ModelConfig
from app.calc.performance import Hardware, gemm_seconds

VALUE_BYTES = 2.0  # bf16 activations and weights
BACKWARD_GEMM = 2.0  # input gradient + weight gradient
BACKWARD_MEMORY = 2.0
FLASH_BACKWARD = 2.5  # FlashAttention-2: 5 matmuls backward, 2 forward (arXiv:2307.08691)
CROSS_ENTROPY_BYTES = 32.0  # per logit element, forward + backward (module docstring)


@dataclass(frozen=True)
class PassWork:
    """One micro-batch through one part of the model on one GPU, in seconds of work and kernel
    counts (their fixed costs are Hardware.kernel_s each)."""

    gemm_fwd_s: float
    attention_fwd_s: float  # the attention core; 0 outside a layer
    attention_bwd_s: float
    memory_fwd_s: float  # memory-bound kernels, forward
    memory_bwd_s: float
    kernels_fwd: float
    kernels_bwd: float

    # Plain properties: the search reads each once per pass table it builds, and a
    # cached_property's lookup costs more than the sum it would keep.
    @property
    def forward_s(self) -> float:
        return self.gemm_fwd_s + self.attention_fwd_s + self.memory_fwd_s

    @property
    def compute_s(self) -> float:
        """GEMMs and the attention core, forward and backward."""
        return (1 + BACKWARD_GEMM) * self.gemm_fwd_s + self.attention_fwd_s + self.attention_bwd_s

    @property
    def memory_s(self) -> float:
        return self.memory_fwd_s + self.memory_bwd_s

    @property
    def kernels(self) -> float:
        return self.kernels_fwd + self.kernels_bwd

    def selective_s(self, hw: Hardware) -> float:
        """What selective recompute runs again: the attention core (Korthikanti Section 5)."""
        return self.attention_fwd_s + hw.kernel_s * (1 if self.attention_fwd_s else 0)

    def full_s(self, hw: Hardware) -> float:
        """What full recompute runs again: the whole forward with its kernels."""
        return self.forward_s + self.kernels_fwd * hw.kernel_s


def _gemms(hw: Hardware, shapes: list[tuple[float, float, float, float]]) -> float:
    total = 0.0
    for m, n, k, batch in shapes:
        total += gemm_seconds(m, n, k, hw, batch)
    return total


@lru_cache(maxsize=65536)
def layer_pass(
    cfg: ModelConfig, seq_len: int, b: int, tp: int, sp: bool, cp: int, ep: int,
    flash: bool, dropout: bool, hw: Hardware,
) -> PassWork:  # fmt: skip
    """One transformer layer, one micro-batch of b sequences (module docstring)."""
    t = float(tp)
    tokens = b * seq_len / cp
    d = cfg.dim_per_head
    q, kv = cfg.heads * d / t, max(cfg.kv_heads, t) * d / t  # a KV head per rank at least
    h = float(cfg.hidden)
    gated = cfg.ffn_type == "swiglu"
    shapes = [(tokens, q + 2 * kv, h, 1.0), (tokens, h, q, 1.0)]
    mlp_width = 0.0
    if cfg.experts > 1:
        local = cfg.experts / ep
        routed = tokens * cfg.top_k * ep / cfg.experts  # tokens per local expert
        f = cfg.ffn_hidden / t
        shapes += [(routed, f * (2 if gated else 1), h, local), (routed, h, f, local)]
        shapes.append((tokens, float(cfg.experts), h, 1.0))  # router
        mlp_width += tokens * cfg.top_k * f
        if cfg.shared_experts:
            fs = cfg.shared_experts * cfg.ffn_hidden / t
            shapes += [(tokens, fs * (2 if gated else 1), h, 1.0), (tokens, h, fs, 1.0)]
            mlp_width += tokens * fs
    else:
        f = cfg.ffn_hidden / t
        shapes += [(tokens, f * (2 if gated else 1), h, 1.0), (tokens, h, f, 1.0)]
        mlp_width = tokens * f
    gemm = _gemms(hw, shapes)
    kernels = float(len(shapes))

    h_out = h / t if sp else h
    values = 2 * 2 * tokens * h_out + 2 * 3 * tokens * h_out  # norms, residual adds
    kernels += 4
    if not cfg.learned_positions:
        values += 2 * tokens * (q + kv)
        kernels += 2
    values += (3 if gated else 2) * mlp_width
    kernels += 1
    moved = VALUE_BYTES * values
    if dropout:
        moved += 2 * (2 * VALUE_BYTES + 1) * tokens * h_out
        kernels += 2
    if cfg.experts > 1:  # permute and unpermute the routed tokens, both ways
        moved += 2 * 2 * VALUE_BYTES * tokens * cfg.top_k * h
        kernels += 4

    if flash:
        # What the kernel executes: a causal flash kernel skips the masked half, so time
        # takes the causal count; the FLOPs the product shows (MFU) take the full one.
        attention_flops = tokens * attention_flops_per_token(1, seq_len, q, causal=True)
        attention_fwd = attention_flops / hw.attention_flops
        attention_bwd = FLASH_BACKWARD * attention_fwd
        kernels += 1 if cp == 1 else 3 * cp
    else:
        scores = b * (cfg.heads / t) * (seq_len / cp) * seq_len
        attention_fwd = _gemms(
            hw, [(seq_len / cp, seq_len, d, b * cfg.heads / t),
                 (seq_len / cp, d, seq_len, b * cfg.heads / t)]
        )  # fmt: skip
        softmax = scores * ((2 + 3) * VALUE_BYTES + (1 if dropout else 0))
        attention_fwd += softmax / hw.hbm_bytes_per_s
        attention_bwd = BACKWARD_GEMM * attention_fwd
        kernels += 4
    memory_fwd = moved / hw.hbm_bytes_per_s
    return PassWork(
        gemm_fwd_s=gemm,
        attention_fwd_s=attention_fwd,
        attention_bwd_s=attention_bwd,
        memory_fwd_s=memory_fwd,
        memory_bwd_s=BACKWARD_MEMORY * memory_fwd,
        kernels_fwd=kernels,
        kernels_bwd=2 * kernels,
    )


@lru_cache(maxsize=65536)
def head_pass(cfg: ModelConfig, seq_len: int, b: int, tp: int, sp: bool, cp: int,
              hw: Hardware) -> PassWork:  # fmt: skip
    """The last stage's final norm, output projection and cross-entropy, one micro-batch."""
    tokens = b * seq_len / cp
    h = float(cfg.hidden)
    logits = tokens * cfg.vocab / tp
    gemm = gemm_seconds(tokens, cfg.vocab / tp, h, hw)
    norm = 2 * VALUE_BYTES * tokens * (h / tp if sp else h)
    forward = (norm + logits * 14.0) / hw.hbm_bytes_per_s  # cast 6 + log-softmax 8
    backward = (2 * norm + logits * (CROSS_ENTROPY_BYTES - 14.0)) / hw.hbm_bytes_per_s
    return PassWork(gemm, 0.0, 0.0, forward, backward, kernels_fwd=4, kernels_bwd=6)


@lru_cache(maxsize=65536)
def embedding_pass(cfg: ModelConfig, seq_len: int, b: int, tp: int, cp: int,
                   hw: Hardware) -> PassWork:  # fmt: skip
    """The first stage's token embedding (a gather forward, a scatter-add backward)."""
    tokens = b * seq_len / cp
    moved = VALUE_BYTES * tokens * cfg.hidden
    return PassWork(0.0, 0.0, 0.0, moved / hw.hbm_bytes_per_s, 2 * moved / hw.hbm_bytes_per_s,
                    kernels_fwd=1, kernels_bwd=2)  # fmt: skip
