"""Model-states memory under ZeRO against the paper's Figure 1, hand derivations and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.memory import (
    MIXED_PRECISION_ADAM,
    ZERO_STAGES,
    largest_model,
    model_states_all_stages,
    model_states_per_gpu,
    precision_recipe,
)
from app.calc.units import GB


@pytest.mark.parametrize(
    ("stage", "published_gb"),
    # ZeRO (arXiv:1910.02054) Figure 1: Psi = 7.5B, N_d = 64, K = 12. The paper rounds to
    # one decimal place, so the check is to that precision.
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],
)
def test_zero_paper_figure_1(stage: int, published_gb: float) -> None:
    states = model_states_per_gpu(7.5e9, 64, stage)
    assert round(states.total_bytes / GB, 1) == published_gb


def test_figure_1_terms_by_hand() -> None:
    # Stage 2: 2 * 7.5e9 bytes of weights, (2 + 12) * 7.5e9 / 64 of gradients and optimizer.
    s = model_states_per_gpu(7.5e9, 64, 2)
    assert s.weights_bytes == 15e9
    assert s.grads_bytes == 2 * 7.5e9 / 64
    assert s.optimizer_bytes == 12 * 7.5e9 / 64
    assert s.total_bytes == pytest.approx(16.640625e9, rel=1e-15)


def test_sixteen_bytes_per_parameter_without_sharding() -> None:
    recipe = MIXED_PRECISION_ADAM
    assert recipe.weight_bytes + recipe.grad_bytes + recipe.optimizer_bytes == 16
    assert model_states_per_gpu(1e9, 8, 0).total_bytes == 16e9


@pytest.mark.parametrize(
    ("params", "dp_degree", "stage", "message"),
    [
        (0, 8, 0, "params"),
        (-1, 8, 1, "params"),
        (1e9, 0, 1, "dp_degree"),
        (1e9, 8, 4, "zero_stage"),
    ],
)
def test_rejects_impossible_inputs(params: float, dp_degree: int, stage: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model_states_per_gpu(params, dp_degree, stage)


params_st = st.floats(min_value=1e3, max_value=1e14, allow_nan=False)
dp_st = st.integers(min_value=1, max_value=2**20)


@given(params_st, dp_st)
def test_each_stage_never_needs_more_than_the_one_before(params: float, dp: int) -> None:
    totals = [s.total_bytes for s in model_states_all_stages(params, dp)]
    pairs = zip(totals, totals[1:], strict=False)
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in pairs)


@given(params_st, dp_st)
def test_stage_3_is_the_unsharded_total_divided_by_dp(params: float, dp: int) -> None:
    baseline, *_, stage3 = model_states_all_stages(params, dp)
    assert stage3.total_bytes == pytest.approx(baseline.total_bytes / dp, rel=1e-12)


@given(params_st, st.sampled_from(ZERO_STAGES))
def test_one_rank_shards_nothing(params: float, stage: int) -> None:
    assert model_states_per_gpu(params, 1, stage).total_bytes == pytest.approx(16 * params)


@given(params_st, dp_st, st.sampled_from(ZERO_STAGES))
def test_all_ranks_together_hold_at_least_one_full_copy(params: float, dp: int, stage: int) -> None:
    # Sharding removes duplicates; it never loses a byte of state.
    s = model_states_per_gpu(params, dp, stage)
    assert s.total_bytes * dp >= 16 * params * (1 - 1e-12)


# ZeRO (arXiv:1910.02054) Table 1: per-device model-state memory in GB for P_os, P_os+g and
# P_os+g+p (K = 12) as the data-parallel degree grows. The paper prints 3-4 significant
# digits and cuts some entries short (4187 for 4187.5), so each value must agree to within
# one unit of its last printed digit.
ZERO_TABLE_1 = {
    7.5e9: {1: (120, 120, 120), 4: (52.5, 41.3, 30), 16: (35.6, 21.6, 7.5),
            64: (31.4, 16.6, 1.88), 256: (30.4, 15.4, 0.47), 1024: (30.1, 15.1, 0.12)},
    128e9: {1: (2048, 2048, 2048), 4: (896, 704, 512), 16: (608, 368, 128),
            64: (536, 284, 32), 256: (518, 263, 8), 1024: (513, 257, 2)},
    1e12: {1: (16000, 16000, 16000), 4: (7000, 5500, 4000), 16: (4750, 2875, 1000),
           64: (4187, 2218, 250), 256: (4046, 2054, 62.5), 1024: (4011, 2013, 15.6)},
}  # fmt: skip


def _last_digit_unit(printed: float) -> float:
    text = f"{printed:g}"
    return 10 ** -len(text.split(".")[1]) if "." in text else 1.0


@pytest.mark.parametrize(
    ("params", "dp", "published"),
    [(p, dp, row) for p, rows in ZERO_TABLE_1.items() for dp, row in rows.items()],
)
def test_zero_paper_table_1(params: float, dp: int, published: tuple[float, ...]) -> None:
    for stage, printed in zip((1, 2, 3), published, strict=True):
        computed = model_states_per_gpu(params, dp, stage).total_bytes / GB
        assert abs(computed - printed) < _last_digit_unit(printed), (stage, computed, printed)


# The inverse question: the largest model whose model states fit a device.


def test_largest_model_by_hand() -> None:
    # 80 GB, ZeRO-3, N_d = 64, mixed-precision Adam (16 B per parameter, all sharded):
    # Psi = 80e9 * 64 / 16 = 320e9.
    best = largest_model(80e9, 64, 3)
    assert best.bytes_per_param_per_gpu == 16 / 64
    assert best.params == 320e9
    # ZeRO-1 on the same: 2 + 2 + 12/64 = 4.1875 B per parameter per GPU: 19.104e9.
    assert largest_model(80e9, 64, 1).params == pytest.approx(80e9 / 4.1875, rel=1e-15)
    # DDP with a 20 GB reserve: (80 - 20) GB / 16 B = 3.75e9.
    assert largest_model(80e9, 64, 0, reserve_bytes=20e9).params == 3.75e9


def test_largest_model_with_another_recipe() -> None:
    # Megatron's bf16 weights + fp32 main grads + fp32 master + Adam: 2 + 4 + (4 + 8) = 18 B;
    # ZeRO-2 on 8 ranks keeps 2 B whole and shards 16: 2 + 16/8 = 4 B per parameter per GPU.
    recipe = precision_recipe("mixed_bf16_fp32_grads", "adam")
    assert (recipe.weight_bytes, recipe.grad_bytes, recipe.optimizer_bytes) == (2, 4, 12)
    assert largest_model(80e9, 8, 2, recipe).params == 20e9


@pytest.mark.parametrize(("stage", "published_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure_1_the_other_way(stage: int, published_gb: float) -> None:
    # ZeRO (arXiv:1910.02054) Figure 1 prints 7.5B parameters on N_d = 64 as these GB to one
    # decimal: any memory that rounds to the printed figure must hold a model that rounds to
    # 7.5B within that rounding, and the exact 7.5B lies between the two ends.
    low = largest_model((published_gb - 0.05) * GB, 64, stage).params
    high = largest_model((published_gb + 0.05) * GB, 64, stage).params
    assert low <= 7.5e9 <= high


@pytest.mark.parametrize(
    ("params", "dp", "published"),
    [(p, dp, row) for p, rows in ZERO_TABLE_1.items() for dp, row in rows.items()],
)
def test_zero_table_1_the_other_way(params: float, dp: int, published: tuple[float, ...]) -> None:
    # Each printed per-device figure, read as a device size, holds the table's model to within
    # one unit of the figure's last printed digit.
    for stage, printed in zip((1, 2, 3), published, strict=True):
        unit = _last_digit_unit(printed)
        low = largest_model((printed - unit) * GB, dp, stage).params
        high = largest_model((printed + unit) * GB, dp, stage).params
        assert low <= params <= high, (stage, dp, printed)


@given(params_st, dp_st, st.sampled_from(ZERO_STAGES), st.floats(0, 0.9))
def test_largest_model_inverts_model_states(
    params: float, dp: int, stage: int, reserve_share: float
) -> None:
    need = model_states_per_gpu(params, dp, stage).total_bytes
    reserve = reserve_share * need
    best = largest_model(need + reserve, dp, stage, reserve_bytes=reserve)
    assert best.params == pytest.approx(params, rel=1e-12)


@pytest.mark.parametrize(
    ("device", "reserve", "message"),
    [(0, 0, "device_bytes"), (80e9, -1, "reserve"), (80e9, 80e9, "reserve")],
)
def test_largest_model_refuses_an_empty_budget(device: float, reserve: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        largest_model(device, 8, 3, reserve_bytes=reserve)
