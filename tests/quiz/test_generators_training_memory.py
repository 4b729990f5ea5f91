"""Generators on training memory (app/quiz/generators/training_memory.py) against hand counts."""

from __future__ import annotations

import pytest

from app.quiz.generators import GENERATORS

LLAMA3_8B_PARAMS = 8_030_261_248  # meta-llama/Meta-Llama-3-8B, model.num_parameters()
SBH_GPT3 = 2048 * 1 * 12288  # s * b * h for one 2048-token GPT-3 sequence


@pytest.mark.parametrize(
    ("recipe", "optimizer", "expected"),
    [
        (0, 0, 16),  # ZeRO paper: 2 + 2 + 4 + 8
        (3, 0, 18),  # Megatron fp32 main grads: 2 + 4 + 4 + 8
        (2, 0, 12),  # pure bf16: 2 + 2 + 0 + 8
        (1, 1, 12),  # fp32 SGD with momentum: 4 + 4 + 0 + 4
        (0, 2, 10),  # 8-bit Adam: 2 + 2 + 4 + 2
    ],
)
def test_bytes_per_parameter(recipe: int, optimizer: int, expected: float) -> None:
    solution = GENERATORS["training.bytes_per_parameter"](
        {"recipe": recipe, "optimizer": optimizer}
    )
    assert solution.answer == expected
    assert solution.steps_latex[-1].endswith(rf"= {expected}\ \text{{bytes}}")


def test_unsharded_model_states_are_16_bytes_per_parameter() -> None:
    solution = GENERATORS["training.model_states_on_gpu"]({"model": 1, "dp": 1, "zero_stage": 0})
    assert solution.answer == pytest.approx(16 * LLAMA3_8B_PARAMS / 1e9)
    assert solution.prompt_fields["model"] == "Llama 3 8B"


def test_zero2_with_optimizer_offload_leaves_the_16_bit_weights_on_the_gpu() -> None:
    inputs = {"model": 1, "dp": 8, "zero_stage": 2, "offload": 1}
    on_gpu = GENERATORS["training.model_states_on_gpu"](inputs)
    on_cpu = GENERATORS["training.model_states_on_cpu"](inputs)
    # ZeRO-Offload: 2 Psi of weights stay; the rank's (2 + 12) Psi / N_d shard moves to the CPU.
    assert on_gpu.answer == pytest.approx(2 * LLAMA3_8B_PARAMS / 1e9)
    assert on_cpu.answer == pytest.approx(14 * LLAMA3_8B_PARAMS / 8 / 1e9)


@pytest.mark.parametrize(
    ("inputs", "expected_bytes"),
    [
        # Korthikanti et al., Table 2, GPT-3 (h = 12288, a = 96), s = 2048, b = 1, t = 8:
        ({"recompute": 0}, SBH_GPT3 * (10 + 24 / 8 + 5 * 96 * 2048 / (12288 * 8))),
        ({"recompute": 0, "sequence_parallel": 1}, SBH_GPT3 * (34 / 8 + 5 * 96 * 2048 / 98304)),
        ({"recompute": 1}, SBH_GPT3 * (10 + 24 / 8)),
        ({"recompute": 1, "sequence_parallel": 1}, SBH_GPT3 * 34 / 8),
        ({"recompute": 2}, 2 * SBH_GPT3),
        ({"recompute": 2, "sequence_parallel": 1}, 2 * SBH_GPT3 / 8),
        ({"flash_attention": 1, "sequence_parallel": 1}, SBH_GPT3 * 34 / 8),
    ],
)
def test_gpt3_layer_activations_match_table_2(
    inputs: dict[str, int], expected_bytes: float
) -> None:
    solution = GENERATORS["training.layer_activation_megabytes"](
        {"seq_len": 2048, "micro_batch": 1, "tp": 8, **inputs}
    )
    assert solution.answer == pytest.approx(expected_bytes / 1e6)
