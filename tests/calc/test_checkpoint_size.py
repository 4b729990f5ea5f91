"""Checkpoint size and write time: hand derivations for Llama 3 405B, Megatron-LM's 1T model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.checkpoint_size import (
    async_blocking_s,
    bytes_per_writer,
    checkpoint_bytes,
    write_time_s,
)

TB = 1e12
GB = 1e9


def test_llama3_405b_mixed_precision_adam_by_hand() -> None:
    # bf16 weights 2 + fp32 master 4 + Adam m 4 + v 4 = 14 B/param;
    # 405e9 x 14 = 5.67e12 B = 5.67 TB (weights 0.81, master 1.62, moments 3.24 TB).
    size = checkpoint_bytes(405e9)
    assert size.per_param == 14
    assert size.weights == pytest.approx(0.81 * TB)
    assert size.master == pytest.approx(1.62 * TB)
    assert size.optimizer == pytest.approx(3.24 * TB)
    assert size.total == pytest.approx(5.67 * TB)


def test_weights_only_and_fp32_weights_by_hand() -> None:
    # Weights only, bf16: 405e9 x 2 = 0.81 TB. FSDP-style fp32 sharded parameters with Adam
    # and no separate master copy: 4 + 4 + 4 = 12 B/param, 4.86 TB.
    assert checkpoint_bytes(405e9, "bf16", False, "none").total == pytest.approx(0.81 * TB)
    fp32 = checkpoint_bytes(405e9, "fp32", False, "adam", "fp32")
    assert fp32.per_param == 12 and fp32.total == pytest.approx(4.86 * TB)
    # SGD with momentum keeps one buffer: 2 + 4 + 4 = 10; bf16 Adam moments: 2 + 4 + 2 + 2 = 10.
    assert checkpoint_bytes(1e9, optimizer="sgd").per_param == 10
    assert checkpoint_bytes(1e9, optimizer_dtype="bf16").per_param == 10


def test_megatron_lm_trillion_parameter_checkpoint() -> None:
    # Narayanan et al. 2021, arXiv:2104.04473: Table 1's largest model has 1008.0 billion
    # parameters; Section 5.10: "the trillion-parameter model has a checkpoint of size 13.8
    # terabytes", and "Checkpoint saves reach 40% of peak write bandwidth (273 GB/s)".
    size = checkpoint_bytes(1008.0e9)
    assert size.total == pytest.approx(14.112 * TB)
    assert size.total == pytest.approx(13.8 * TB, rel=0.03)  # 14 B/param: within 2.3 %
    # 13.8 TB at 273 GB/s: 50.5 s to write, the whole checkpoint.
    assert write_time_s(13.8 * TB, 273 * GB) == pytest.approx(50.55, abs=0.01)


def test_llama3_storage_fabric_write_time_and_shards() -> None:
    # Llama 3 (arXiv:2407.21783, §3.3.1 "Storage"): 2 TB/s sustained, 7 TB/s peak, on up to
    # 16,384 GPUs. 5.67 TB / 2 TB/s = 2.835 s; / 7 TB/s = 0.81 s; 5.67e12 / 16,384 = 346 MB
    # per GPU, within the paper's "1 MB to 4 GB per GPU".
    total = checkpoint_bytes(405e9).total
    assert write_time_s(total, 2 * TB) == pytest.approx(2.835)
    assert write_time_s(total, 7 * TB) == pytest.approx(0.81)
    shard = bytes_per_writer(total, 16_384)
    assert shard == pytest.approx(346.07e6, rel=1e-4)
    assert 1e6 <= shard <= 4e9
    # The blocking copy of an async save at 25 GB/s device-to-host: 0.0138 s.
    assert async_blocking_s(shard, 25 * GB) == pytest.approx(0.013843, rel=1e-4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: checkpoint_bytes(0),
        lambda: checkpoint_bytes(1e9, weights_dtype="int4"),
        lambda: checkpoint_bytes(1e9, optimizer="lion"),
        lambda: bytes_per_writer(1.0, 0),
        lambda: write_time_s(1.0, 0),
        lambda: async_blocking_s(1.0, 0),
    ],
)
def test_impossible_inputs_raise(call) -> None:
    with pytest.raises(ValueError):
        call()


@given(params=st.floats(1, 1e15), writers=st.integers(1, 10**7))
def test_shards_add_up_and_master_never_shrinks(params: float, writers: int) -> None:
    with_master = checkpoint_bytes(params)
    without = checkpoint_bytes(params, master_weights=False)
    assert with_master.total - without.total == pytest.approx(4 * params)
    assert bytes_per_writer(with_master.total, writers) * writers == pytest.approx(
        with_master.total
    )
