"""Communication volumes per GPU against the papers' figures and hand derivations."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.comm import Collective
from app.calc.comm_volume import (
    SEND,
    CommLayout,
    bus_factor,
    cp_layer_elements,
    ddp_elements,
    ep_layer_elements,
    latency_steps,
    pp_elements,
    step_calls,
    tp_layer_elements,
    zero_elements,
)
from app.calc.links import LINKS, alpha_beta_time
from app.calc.model import PRESETS

ranks = st.integers(min_value=2, max_value=100_000)
params = st.integers(min_value=1, max_value=10**12)


@pytest.mark.parametrize(
    ("kind", "factor"),
    # nccl-tests doc/PERFORMANCE.md, n = 8: all-reduce busBw = algBw * 2(n-1)/n; all-gather,
    # reduce-scatter and all-to-all (n-1)/n; sendrecv busBw = algBw.
    [
        (Collective.ALL_REDUCE.value, Fraction(14, 8)),
        (Collective.ALL_GATHER.value, Fraction(7, 8)),
        (Collective.REDUCE_SCATTER.value, Fraction(7, 8)),
        (Collective.ALL_TO_ALL.value, Fraction(7, 8)),
        (SEND, Fraction(1)),
    ],
)
def test_bus_factors_are_nccl_tests(kind: str, factor: Fraction) -> None:
    assert bus_factor(kind, 8) == factor


def test_latency_steps_of_a_ring() -> None:
    # Ring all-reduce: N-1 reduce-scatter steps then N-1 all-gather steps.
    assert latency_steps(Collective.ALL_REDUCE.value, 8) == 14
    assert latency_steps(Collective.ALL_GATHER.value, 8) == 7
    assert latency_steps(SEND, 2) == 1
    assert latency_steps(Collective.ALL_REDUCE.value, 1) == 0


@given(params, ranks)
def test_ddp_sends_2_n_minus_1_over_n_of_the_gradients(psi: int, n: int) -> None:
    # 2(N-1)/N * Psi = 2 Psi - 2 Psi / N: tends to 2 Psi, the ZeRO paper's DP baseline (7.1).
    assert ddp_elements(psi, n) == pytest.approx(2 * psi - 2 * psi / n, rel=1e-12)
    assert ddp_elements(psi, n) < 2 * psi


def test_ddp_approaches_twice_the_parameters() -> None:
    psi = 7_500_000_000
    assert ddp_elements(psi, 2) == psi  # 2 * 1/2
    assert ddp_elements(psi, 64) == psi * 126 / 64
    assert ddp_elements(psi, 10**6) / psi == pytest.approx(2, abs=1e-5)


@given(params, ranks)
def test_zero3_is_3_n_minus_1_over_n_and_1_5x_ddp(psi: int, n: int) -> None:
    # ZeRO paper Section 7.2.2: all-gather Psi (forward) + all-gather Psi (backward) +
    # reduce-scatter Psi = 3 Psi, "1.5x compared to the baseline DP"; exact at finite N.
    assert zero_elements(psi, n, 3) == float(Fraction(3 * (n - 1), n) * psi)
    assert zero_elements(psi, n, 3) == pytest.approx(1.5 * ddp_elements(psi, n), rel=1e-12)


@given(params, ranks, st.sampled_from([1, 2]))
def test_zero_1_and_2_move_what_ddp_moves(psi: int, n: int, stage: int) -> None:
    # Section 7.2.1: reduce-scatter Psi + all-gather Psi = 2 Psi, the same as DP.
    assert zero_elements(psi, n, stage) == pytest.approx(ddp_elements(psi, n), rel=1e-12)


def test_zero3_large_n_limit_is_three_psi() -> None:
    psi = 10**9
    assert zero_elements(psi, 10**6, 3) / psi == pytest.approx(3, abs=1e-5)
    assert zero_elements(psi, 10**6, 3) / ddp_elements(psi, 10**6) == pytest.approx(1.5)


def test_zero3_gathers_again_for_every_micro_batch() -> None:
    # m = 4: 4 forward + 4 backward all-gathers + 4 gradient reduce-scatters (only a shard of
    # the gradients is kept, so each micro-batch is reduced) = 12 (N-1)/N Psi.
    assert zero_elements(1_000, 4, 3, microbatches=4) == 12 * 750


def test_gradient_accumulation_costs_zero2_but_not_ddp_or_zero1() -> None:
    # m = 4, N = 4: DDP (no_sync) and ZeRO-1 reduce whole gradients once per step; ZeRO-2
    # keeps a shard only, so it reduce-scatters every micro-batch, then all-gathers once.
    for stage in (0, 1):
        assert zero_elements(1_000, 4, stage, microbatches=4) == 2 * 750
    assert zero_elements(1_000, 4, 2, microbatches=4) == (4 + 1) * 750


def test_megatron_tp_volume_per_layer_by_hand() -> None:
    # GPT-3 175B shape, b = 1, s = 2048, h = 12288, t = 8. Megatron-LM Figure 4: "4 total
    # communication operations in the forward and backward pass" per layer, all-reduces of
    # b*s*h = 25,165,824 elements; ring all-reduce sends 2 * 7/8 of it: 44,040,192; times 4.
    assert tp_layer_elements(1, 2048, 12288, 8) == 176_160_768


@given(st.integers(1, 1024), st.integers(1, 1024), st.integers(1, 8), st.integers(1, 64))
def test_more_tp_sends_more_per_gpu(t1: int, t2: int, b: int, s: int) -> None:
    # 4 * 2(t-1)/t * bsh grows with t: splitting the layer wider never saves TP traffic
    # per GPU; it only approaches 8 bsh.
    low, high = sorted((t1, t2))
    h = 128
    assert tp_layer_elements(b, s, h, low) <= tp_layer_elements(b, s, h, high)
    if low < high:
        assert tp_layer_elements(b, s, h, low) < tp_layer_elements(b, s, h, high)
    assert tp_layer_elements(b, s, h, high) < 8 * b * s * h


def _layout(**kw: object) -> CommLayout:
    return CommLayout(**{"model": PRESETS["llama3-70b"], **kw})  # type: ignore[arg-type]


def test_sequence_parallel_moves_the_same_volume_as_tp() -> None:
    # arXiv:2205.05198 Section 4.2.2: each all-reduce becomes a reduce-scatter + all-gather.
    plain = _layout(tp=8, seq_len=8192, microbatches=2)
    sp = replace(plain, sequence_parallel=True)
    total = sum(c.elements_per_step for c in step_calls(plain) if c.strategy == "tp")
    assert total == sum(c.elements_per_step for c in step_calls(sp) if c.strategy == "tp")
    # 80 layers * 2 micro-batches * 176... by hand: 4 * 80 * 2 * 2 * 7/8 * 8192 * 8192.
    assert total == 4 * 80 * 2 * 2 * 7 / 8 * 8192 * 8192


def test_pp_volume_by_hand() -> None:
    # 8 micro-batches, each an activation forward and a gradient backward of b*s*h / t:
    # 2 * 8 * 8192 * 8192 / 8 = 134,217,728 elements.
    assert pp_elements(1, 8192, 8192, 8, tp=8) == 134_217_728
    calls = step_calls(_layout(tp=8, pp=2, microbatches=8, seq_len=8192))
    assert sum(c.elements_per_step for c in calls if c.strategy == "pp") == 134_217_728


def test_ep_volume_by_hand() -> None:
    # Mixtral: top-2, h = 4096, 4096 tokens, ep = 8: 4 all-to-alls of 2 * 4096 * 4096
    # elements, 7/8 leaving: 4 * 7/8 * 33,554,432 = 117,440,512 per layer per micro-batch.
    assert ep_layer_elements(2, 4096, 4096, 8) == 117_440_512
    mixtral = CommLayout(PRESETS["mixtral-8x7b"], dp=8, ep=8, seq_len=4096)
    ep = [c for c in step_calls(mixtral) if c.strategy == "ep"]
    assert sum(c.elements_per_step for c in ep) == 32 * 117_440_512


def test_cp_volume_by_hand() -> None:
    # Llama 3 8B: 8 KV heads x 128 = 1024 K values per token. s = 8192 on cp = 4: 2048
    # tokens per rank, K and V = 2 * 2048 * 1024 = 4,194,304 elements. Forward passes 3
    # blocks on; backward passes K,V again and dK,dV: 3 * 3 * 4,194,304 = 37,748,736.
    assert cp_layer_elements(1, 2048, 1024, 4) == 37_748_736
    llama = CommLayout(PRESETS["llama3-8b"], cp=4, seq_len=8192)
    cp = [c for c in step_calls(llama) if c.strategy == "cp"]
    assert sum(c.elements_per_step for c in cp) == 32 * 37_748_736


def test_ddp_of_llama2_7b_on_eight_gpus() -> None:
    # Psi = 6,738,415,616 (Hugging Face meta-llama/Llama-2-7b-hf); 2 * 7/8 * Psi.
    calls = step_calls(CommLayout(PRESETS["llama2-7b"], dp=8))
    assert [(c.label, c.kind) for c in calls] == [("Gradient all-reduce", "all_reduce")]
    assert calls[0].elements_per_step == 11_792_227_328


def test_layouts_that_cannot_run_are_errors() -> None:
    with pytest.raises(ValueError, match="must divide the 64 attention heads"):
        step_calls(_layout(tp=3))
    with pytest.raises(ValueError, match="mixture-of-experts"):
        step_calls(_layout(ep=2, dp=2))
    with pytest.raises(ValueError, match="sequence parallelism"):
        step_calls(_layout(tp=8, seq_len=12, sequence_parallel=True))


def test_link_presets_match_their_spec_sheets() -> None:
    assert LINKS["nvlink4"].bandwidth_bytes_per_s == 900e9 / 2  # H100: 900 GB/s both ways
    assert LINKS["nvlink3"].bandwidth_bytes_per_s == 600e9 / 2  # A100: 600 GB/s both ways
    assert LINKS["ib-ndr"].bandwidth_bytes_per_s == 400e9 / 8  # 400 Gb/s
    assert LINKS["ib-hdr"].bandwidth_bytes_per_s == 200e9 / 8  # 200 Gb/s


def test_alpha_beta_time_by_hand() -> None:
    # 1 GB over NVLink 4 in 14 ring steps: 14 * 3.4 us + 1e9 / 450e9 s.
    t = alpha_beta_time(1e9, 14, LINKS["nvlink4"])
    assert t == pytest.approx(14 * 3.4e-6 + 1 / 450)
    assert alpha_beta_time(0, 14, LINKS["nvlink4"]) == 0


@given(params, st.integers(2, 4096))
def test_busbw_equals_link_bandwidth_without_latency(psi: int, n: int) -> None:
    # nccl-tests: algbw = S / t, busbw = algbw * 2(n-1)/n. With alpha = 0 the ring's time is
    # (2(n-1)/n * S) / beta, so busbw is exactly the link's bandwidth.
    link = replace(LINKS["ib-ndr"], latency_s=0.0)
    payload_bytes = 2 * psi
    t = alpha_beta_time(2 * ddp_elements(psi, n), 2 * (n - 1), link)
    busbw = payload_bytes / t * float(bus_factor(Collective.ALL_REDUCE.value, n))
    assert busbw == pytest.approx(link.bandwidth_bytes_per_s, rel=1e-9)
