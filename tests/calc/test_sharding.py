"""torch's sharding rules, against hand-worked examples."""

from __future__ import annotations

import pytest

from app.calc.memory import FP32_ADAM, model_states_per_gpu
from app.calc.precision import bytes_per_param
from app.calc.sharding import (
    adam_state_bytes,
    greedy_partition,
    padded_shard_elements,
    padded_shard_rows,
    padding_elements,
    shard_elements,
    shard_rows,
)


def test_dim0_is_cut_like_torch_chunk() -> None:
    # 10 rows on 4 ranks: torch.chunk gives 3, 3, 3, 1; every padded shard holds 3.
    assert [shard_rows(10, 4, r) for r in range(4)] == [3, 3, 3, 1]
    assert padded_shard_rows(10, 4) == 3
    # 5 rows on 4 ranks: 2, 2, 1, 0 (the last rank owns nothing but still stores 2 padded rows).
    assert [shard_rows(5, 4, r) for r in range(4)] == [2, 2, 1, 0]


def test_padding_counts_the_missing_rows_times_the_row_size() -> None:
    assert padded_shard_elements((101, 32), 2) == 51 * 32
    assert shard_elements((101, 32), 2, 1) == 50 * 32
    assert padding_elements([(101, 32), (64,), (101, 32)], 2) == 2 * 32
    assert padding_elements([(10,)], 4) == 2


def test_greedy_partition_largest_first_to_the_least_loaded_rank() -> None:
    # Sorted: 8 (idx 1) -> r0, 5 (idx 3) -> r1, 4 (idx 0) -> r1 (5 < 8), 3 (idx 2) -> r0 (8 < 9).
    assert greedy_partition([4, 8, 3, 5], 2) == [1, 0, 0, 1]
    # Ties go to the lowest rank, equal sizes keep their order.
    assert greedy_partition([2, 2, 2], 3) == [0, 1, 2]


def test_adam_state_is_m_and_v_plus_a_step_per_tensor() -> None:
    assert adam_state_bytes(1000, 3) == 8000 + 12


def test_fp32_adam_is_16_bytes_per_parameter_like_the_precision_table() -> None:
    table = bytes_per_param("fp32", "adam")
    assert (FP32_ADAM.weight_bytes, FP32_ADAM.grad_bytes, FP32_ADAM.optimizer_bytes) == (
        table.weights,
        table.grads,
        table.optimizer_states,
    )
    assert table.total == 16
    # ZeRO-3 on 4 ranks: 16 B / 4 per parameter.
    assert model_states_per_gpu(1000, 4, 3, FP32_ADAM).total_bytes == 4000


@pytest.mark.parametrize("bad", [0, -1])
def test_ranks_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError):
        padded_shard_rows(4, bad)
