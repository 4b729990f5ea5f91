"""Bytes per parameter by recipe and optimizer, the published conventions, and GPU sizes."""

from __future__ import annotations

import pytest

from app.calc.gpus import GPUS
from app.calc.memory import MIXED_PRECISION_ADAM
from app.calc.precision import (
    GIB_OVER_GB,
    OPTIMIZERS,
    RECIPES,
    bytes_per_param,
    conventions,
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
