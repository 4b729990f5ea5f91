"""Communication generators against hand-derived numbers, and every item using them answerable."""

from __future__ import annotations

import pytest

from app.calc.model import PRESETS, count_params
from app.quiz.generators import GENERATORS
from app.quiz.generators.comm import (
    COLLECTIVE_ORDER,
    LINK_ORDER,
    PRESET_ORDER,
    STRATEGY_ORDER,
)

ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER = (
    COLLECTIVE_ORDER.index(k) for k in ("all_reduce", "reduce_scatter", "all_gather")
)
NVLINK4, IB_NDR = LINK_ORDER.index("nvlink4"), LINK_ORDER.index("ib-ndr")


def test_ring_all_reduce_sends_2_n_minus_1_over_n_of_the_buffer() -> None:
    # 16 GB on 8 ranks: 2 * 7/8 * 16 = 28 GB per rank.
    solution = GENERATORS["comm.ring_gb_per_rank"](
        {"collective": ALL_REDUCE, "payload_gb": 16, "ranks": 8}
    )
    assert solution.answer == pytest.approx(28.0)
    assert solution.prompt_fields["collective"] == "all-reduce"


def test_reduce_scatter_plus_all_gather_is_one_all_reduce() -> None:
    # Sequence parallelism's claim: the same volume as the all-reduce it replaces.
    ring = GENERATORS["comm.ring_gb_per_rank"]
    halves = [ring({"collective": k, "payload_gb": 4, "ranks": 8}).answer
              for k in (REDUCE_SCATTER, ALL_GATHER)]  # fmt: skip
    assert halves == [pytest.approx(3.5), pytest.approx(3.5)]
    whole = ring({"collective": ALL_REDUCE, "payload_gb": 4, "ranks": 8}).answer
    assert sum(halves) == pytest.approx(whole)


def test_ring_time_is_alpha_per_step_plus_bytes_over_beta() -> None:
    # 64 MB, 8 ranks, NVLink 4: 14 steps x 3.4 us + 1.75 * 64e6 B / 450e9 B/s = 0.29649 ms.
    solution = GENERATORS["comm.ring_time_ms"](
        {"collective": ALL_REDUCE, "payload_mb": 64, "ranks": 8, "link": NVLINK4}
    )
    assert solution.answer == pytest.approx((14 * 3.4e-6 + 112e6 / 450e9) * 1e3)
    assert solution.prompt_fields["latency_steps"] == "14"


def test_tp_layer_volume_is_four_all_reduces_of_bsh() -> None:
    # Megatron-LM Figure 4: 4 * 2(t-1)/t * b*s*h elements, bf16. b=1, s=h=8192, t=8.
    solution = GENERATORS["comm.tp_layer_mb"](
        {"micro_batch": 1, "seq_len": 8192, "hidden": 8192, "tp": 8}
    )
    assert solution.answer == pytest.approx(4 * 2 * 7 / 8 * 8192 * 8192 * 2 / 1e6)


def test_ddp_step_sends_two_n_minus_1_over_n_of_the_gradients() -> None:
    psi = count_params(PRESETS["llama3-8b"]).total
    assert psi == pytest.approx(8.03e9, rel=0.005)  # Meta's published 8.03 B
    solution = GENERATORS["comm.strategy_gb_per_step"](
        {"preset": PRESET_ORDER.index("llama3-8b"), "dp": 8, "tp": 1, "pp": 1,
         "zero_stage": 0, "microbatches": 1, "strategy": STRATEGY_ORDER.index("dp")}
    )  # fmt: skip
    assert solution.answer == pytest.approx(2 * 7 / 8 * psi * 2 / 1e9)


def test_expert_all_to_all_volume_for_mixtral() -> None:
    # 4 all-to-alls x 32 layers x 7/8 leaving x top-2 x 4096 tokens x h 4096 x 2 bytes.
    solution = GENERATORS["comm.strategy_gb_per_step"](
        {"preset": PRESET_ORDER.index("mixtral-8x7b"), "dp": 8, "tp": 1, "pp": 1, "ep": 8,
         "seq_len": 4096, "microbatches": 1, "strategy": STRATEGY_ORDER.index("ep")}
    )  # fmt: skip
    assert solution.answer == pytest.approx(4 * 32 * 7 / 8 * 2 * 4096 * 4096 * 2 / 1e9)


def test_step_time_bounds_bracket_compute_plus_communication() -> None:
    step = GENERATORS["comm.step_time_s"]
    base = {"preset": PRESET_ORDER.index("llama3-8b"), "dp": 16, "tp": 1, "pp": 1,
            "zero_stage": 3, "microbatches": 1, "dp_link": IB_NDR, "compute_s": 1.0}  # fmt: skip
    perfect = step({**base, "overlap": 0}).answer
    none = step({**base, "overlap": 1}).answer
    assert perfect == pytest.approx(max(1.0, none - 1.0))
    assert none > perfect >= 1.0
