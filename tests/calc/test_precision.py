"""Bytes per parameter by recipe and optimizer, the published conventions, and GPU sizes."""

from __future__ import annotations

import pytest

from app.calc.gpus import GPUS
from app.calc.memory import MIXED_PRECISION_ADAM, largest_model, precision_recipe
from app.calc.precision import (
    GIB_OVER_GB,
    OPTIMIZERS,
    RECIPES,
    bytes_per_param,
    conventions,
    fp8_gemm_peaks,
    gemm_input_activation_bytes,
)


def test_mixed_precision_adam_is_the_zero_papers_16_bytes() -> None:
    b = bytes_per_param("mixed_bf16", "adam")
    assert (b.weights, b.grads, b.master, b.optimizer) == (2, 2, 4, 8)
    # The ZeRO paper's K = 12 is the master copy plus Adam's m and v, as app.calc.memory has it.
    assert b.optimizer_states == MIXED_PRECISION_ADAM.optimizer_bytes == 12
    assert b.total == 16


@pytest.mark.parametrize(
    ("recipe", "optimizer", "expected"),
    [
        ("fp32", "adam", (4, 4, 0, 8)),
        ("mixed_fp16", "adam", (2, 2, 4, 8)),
        ("bf16", "adam", (2, 2, 0, 8)),
        ("mixed_bf16_fp32_grads", "adam", (2, 4, 4, 8)),
        # BF16_Optimizer: bf16 .grad plus torch.zeros_like(flat bf16 group, dtype=float32)
        ("deepspeed_bf16", "adam", (2, 6, 4, 8)),
        ("mixed_bf16", "sgd_momentum", (2, 2, 4, 4)),
        ("mixed_bf16", "adam_8bit", (2, 2, 4, 2)),
    ],
)
def test_bytes_per_term(recipe: str, optimizer: str, expected: tuple[float, ...]) -> None:
    b = bytes_per_param(recipe, optimizer)
    assert (b.weights, b.grads, b.master, b.optimizer) == expected


def test_every_recipe_and_optimizer_has_sources() -> None:
    for recipe in RECIPES:
        for optimizer in OPTIMIZERS:
            b = bytes_per_param(recipe, optimizer)
            assert all((b.weights_source, b.grads_source, b.master_source, b.optimizer_source))


def test_megatron_table_non_distributed_rows() -> None:
    # Megatron-LM dist_optimizer.md: bf16 params + fp32 grads 18; fp32 + fp32 16.
    assert bytes_per_param("mixed_bf16_fp32_grads", "adam").total == 18
    assert bytes_per_param("fp32", "adam").total == 16


@pytest.mark.parametrize(("recipe", "optimizer"), [("int4", "adam"), ("mixed_bf16", "lion")])
def test_rejects_unknown_names(recipe: str, optimizer: str) -> None:
    with pytest.raises(ValueError, match="must be one of"):
        bytes_per_param(recipe, optimizer)


def test_conventions_reproduce_10_16_18_18_20() -> None:
    assert sorted(c.bytes_per_param for c in conventions()) == [10, 16, 18, 18, 20]
    for c in conventions():
        assert c.label.startswith(f"{c.bytes_per_param:g} B")
        assert c.explanation and c.source


def test_gib_is_7_4_percent_larger_than_gb() -> None:
    assert GIB_OVER_GB == pytest.approx(0.073741824, abs=1e-12)


def test_gpu_memory_is_what_nvidia_smi_reports() -> None:
    assert GPUS["h100-80gb"].memory_bytes == 81_559 * 2**20
    assert GPUS["a100-40gb"].memory_bytes == 40 * 2**30
    assert GPUS["h200"].memory_bytes == 143_771 * 2**20
    for gpu in GPUS.values():
        assert gpu.slug and "MiB" in gpu.source and "spec sheet" in gpu.source


@pytest.mark.parametrize(
    ("recipe", "optimizer", "terms", "fp8_copies", "total"),
    [
        # TE's default on Hopper: bf16 weight 2 + cached FP8 copy 1 + FP8 transpose 1,
        # bf16 grads 2, fp32 master 4, Adam 8: 18 B (2 more than mixed_bf16's 16).
        ("fp8_te", "adam", (2, 2, 4, 8), 2, 18),
        # quantized_model_init: FP8 weight 1 + FP8 transpose 1, grads 2, master 4, Adam 8: 16 B.
        ("fp8_te_primary", "adam", (1, 2, 4, 8), 1, 16),
        # DeepSeek-V3 3.3: FP8 weights 1, fp32 grads 4, fp32 master 4, bf16 m and v 2 + 2: 13 B.
        ("fp8_deepseek_v3", "adam_bf16", (1, 4, 4, 4), 0, 13),
        # The same with fp32 moments: 17 B.
        ("fp8_deepseek_v3", "adam", (1, 4, 4, 8), 0, 17),
        # bf16 moments alone on mixed_bf16: 2 + 2 + 4 + 4 = 12 B.
        ("mixed_bf16", "adam_bf16", (2, 2, 4, 4), 0, 12),
    ],
)
def test_fp8_recipes_by_hand(
    recipe: str, optimizer: str, terms: tuple[float, ...], fp8_copies: float, total: float
) -> None:
    b = bytes_per_param(recipe, optimizer)
    assert (b.weights, b.grads, b.master, b.optimizer) == terms
    assert b.fp8_copies == fp8_copies
    assert b.weights_on_gpu == b.weights + fp8_copies
    assert b.total == total


def test_fp8_recipe_on_the_zero_calculator() -> None:
    # fp8_te under ZeRO-3 on 64 ranks: 18 B / 64 per parameter; 80 GB holds 80e9 * 64 / 18.
    recipe = precision_recipe("fp8_te", "adam")
    assert (recipe.weight_bytes, recipe.grad_bytes, recipe.optimizer_bytes) == (4, 2, 12)
    assert largest_model(80e9, 64, 3, recipe).params == pytest.approx(80e9 * 64 / 18, rel=1e-15)


def test_fp8_halves_the_gemm_inputs_saved_for_backward() -> None:
    # Llama 3 70B (h 8192, f 28672), one sequence of 8192 tokens, one layer:
    # 8192 * (3 * 8192 + 28672) = 8192 * 53248 = 436,207,616 values; bf16 2 B, FP8 1 B.
    bf16 = gemm_input_activation_bytes(8192, 8192, 28672, 2)
    fp8 = gemm_input_activation_bytes(8192, 8192, 28672, 1)
    assert bf16 == 872_415_232 and fp8 == 436_207_616
    # GPT-3-style f = 4h: the four inputs are 7 of Korthikanti's 34 s*b*h bytes per layer.
    assert gemm_input_activation_bytes(1, 1024, 4096, 2) == 14 * 1024


@pytest.mark.parametrize(
    ("slug", "bf16_tflops", "fp8_tflops"),
    # Dense = half the datasheets' "with sparsity" figures (app.calc.hardware cites them):
    # H100 SXM and H200 BF16 1,979* / FP8 3,958* (Hopper whitepaper: 989.4 / 1978.9 dense);
    # HGX B200 FP16/BF16 4.5 PFLOPS* / FP8 9 PFLOPS*.
    [("h100-sxm", 989.4, 1978.9), ("h200", 989.4, 1978.9), ("b200", 2250, 4500)],
)
def test_fp8_dense_peaks_are_twice_bf16(slug: str, bf16_tflops: float, fp8_tflops: float) -> None:
    (peaks,) = fp8_gemm_peaks((slug,))
    assert peaks.bf16_flops == bf16_tflops * 1e12
    assert peaks.fp8_flops == fp8_tflops * 1e12
    assert peaks.fp8_over_bf16 == pytest.approx(2, rel=1e-3)
