"""The pipeline-schedule simulator against hand derivations and the papers' closed forms."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.calc.activations import in_flight_microbatches
from app.calc.pipeline import (
    SCHEDULES,
    Block,
    PipelineSetup,
    closed_form,
    imbalanced_step,
    schedule_problems,
    simulate,
    stage_orders,
    text_gantt,
)
from app.calc.pipeline_query import PipelineQuery, parse_stage_times, pipeline_result

times = st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 3.0])


def bubble_time(setup: PipelineSetup) -> float:
    """Measured t_pb: the step's time minus one stage's work."""
    sim = simulate(setup)
    return sim.total_time - setup.microbatches * (setup.t_f + setup.t_b + setup.t_w)


def spans(sim_row: list[Block]) -> list[tuple[str, int, int, float, float]]:
    return [(b.kind, b.microbatch, b.chunk, b.start, b.end) for b in sim_row]


# Hand derivations, every block written out.


def test_gpipe_two_stages_two_microbatches_by_hand() -> None:
    # F = 1, B + W = 2. Stage 0 forwards 0 and 1 back to back; stage 1 takes each as it
    # arrives; stage 1 runs backward 0 once its own forwards are done (t = 3), backward 1
    # after it; stage 0's backward of micro-batch k waits for stage 1's.
    sim = simulate(PipelineSetup("gpipe", 2, 2, t_f=1, t_b=1, t_w=1))
    assert spans(sim.timeline[0]) == [
        ("F", 0, 0, 0, 1), ("F", 1, 0, 1, 2), ("BW", 0, 0, 5, 7), ("BW", 1, 0, 7, 9),
    ]  # fmt: skip
    assert spans(sim.timeline[1]) == [
        ("F", 0, 0, 1, 2), ("F", 1, 0, 2, 3), ("BW", 0, 0, 3, 5), ("BW", 1, 0, 5, 7),
    ]  # fmt: skip
    # Total 9 = (m + p - 1)(t_f + t_b) = 3 * 3; each stage is busy 6, so idle = 2 * 9 - 12.
    assert sim.total_time == 9
    assert sim.idle_time == 6
    assert sim.bubble_over_ideal == 6 / 12  # (p - 1)/m = 1/2
    assert sim.bubble_fraction_of_total == 6 / 18  # (p - 1)/(m + p - 1) = 1/3


def test_send_receive_time_delays_each_hop_by_hand() -> None:
    # p = 2, m = 1, F = 1, B + W = 2, 0.5 per hop: stage 1's forward starts at 1 + 0.5, its
    # backward at 2.5 (the loss is local), stage 0's backward at 4.5 + 0.5 = 5, ends at 7.
    sim = simulate(PipelineSetup("1f1b", 2, 1, t_f=1, t_b=1, t_w=1, t_p2p=0.5))
    assert spans(sim.timeline[0]) == [("F", 0, 0, 0, 1), ("BW", 0, 0, 5, 7)]
    assert spans(sim.timeline[1]) == [("F", 0, 0, 1.5, 2.5), ("BW", 0, 0, 2.5, 4.5)]
    assert sim.total_time == 7
    # The closed form leaves the hops out: (p - 1)(t_f + t_b) = 3, measured 7 - 3 = 4.
    assert closed_form(sim.setup).bubble_time == 3 and not closed_form(sim.setup).exact


def test_one_f_one_b_orders_by_hand() -> None:
    # Narayanan et al., Figure 4 (top), p = 4, m = 8: stage 0 warms up with 3 forwards.
    orders = stage_orders(PipelineSetup("1f1b", 4, 8))
    text = [" ".join(f"{a.kind}{a.microbatch + 1}" for a in order) for order in orders]
    assert text[0].startswith("F1 F2 F3 F4 BW1 F5 BW2 F6 BW3 F7 BW4 F8 BW5 BW6 BW7 BW8")
    assert text[3].startswith("F1 BW1 F2 BW2 F3 BW3")


def test_one_f_one_b_total_by_hand() -> None:
    # p = 4, m = 8, t_f = 1, t_b = 2: (m + p - 1)(t_f + t_b) = 11 * 3 = 33; ideal 8 * 3 = 24;
    # t_pb / t_id = 9 / 24 = 3/8 = (p - 1)/m; idle / (p total) = 36 / 132 = 3/11.
    sim = simulate(PipelineSetup("1f1b", 4, 8))
    assert sim.total_time == 33
    assert sim.bubble_over_ideal == 0.375
    assert sim.bubble_fraction_of_total == pytest.approx(3 / 11, rel=1e-15)


def test_zb_h1_holds_back_i_weight_gradients_on_stage_i() -> None:
    orders = stage_orders(PipelineSetup("zb-h1", 4, 6))
    text = [" ".join(f"{a.kind}{a.microbatch + 1}" for a in order) for order in orders]
    assert text[0] == "F1 F2 F3 F4 B1 W1 F5 B2 W2 F6 B3 W3 B4 W4 B5 W5 B6 W6"
    assert text[3] == "F1 B1 F2 B2 F3 B3 F4 B4 W1 F5 B5 W2 F6 B6 W3 W4 W5 W6"


def test_zb_h1_four_stages_by_hand() -> None:
    # T_F = T_B = T_W = 1, p = 4, m = 8: the paper's (p - 1)(T_F + T_B - T_W) = 3, so the
    # step takes 8 * 3 + 3 = 27, against 1F1B's 8 * 3 + 3 * 3 = 33.
    assert simulate(PipelineSetup("zb-h1", 4, 8)).total_time == 27


# Published closed forms.


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 9), m=st.integers(1, 24), tf=times, tb=times, tw=times)
def test_gpipe_and_1f1b_equal_narayanan_closed_forms(
    schedule: str, p: int, m: int, tf: float, tb: float, tw: float
) -> None:
    # Narayanan et al., arXiv:2104.04473, Section 2.2.1: t_pb = (p - 1)(t_f + t_b),
    # t_pb / t_id = (p - 1)/m; as a share of the whole step, (p - 1)/(m + p - 1).
    sim = simulate(PipelineSetup(schedule, p, m, t_f=tf, t_b=tb, t_w=tw))  # type: ignore[arg-type]
    assert bubble_time(sim.setup) == pytest.approx((p - 1) * (tf + tb + tw), abs=1e-9)
    assert sim.bubble_over_ideal == pytest.approx((p - 1) / m, abs=1e-12)
    assert sim.bubble_fraction_of_total == pytest.approx((p - 1) / (m + p - 1), abs=1e-12)
    cf = closed_form(sim.setup)
    assert cf.exact and cf.over_ideal == pytest.approx(sim.bubble_over_ideal, abs=1e-12)
    assert cf.fraction_of_total == pytest.approx(sim.bubble_fraction_of_total, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(2, 8), groups=st.integers(1, 4), v=st.integers(2, 6), tf=times, tb=times,
       tw=times)  # fmt: skip
def test_interleaved_equals_narayanan_closed_form(
    p: int, groups: int, v: int, tf: float, tb: float, tw: float
) -> None:
    # Narayanan et al., Section 2.2.2: t_pb = (p - 1)(t_f + t_b)/v, so t_pb/t_id = (p-1)/(vm),
    # and (p - 1)/(vm + p - 1) of the whole step. m = p covers Megatron's all-warm-up case.
    m = groups * p
    sim = simulate(PipelineSetup("interleaved", p, m, v, tf, tb, tw))
    assert bubble_time(sim.setup) == pytest.approx((p - 1) * (tf + tb + tw) / v, abs=1e-9)
    assert sim.bubble_over_ideal == pytest.approx((p - 1) / (v * m), abs=1e-12)
    assert sim.bubble_fraction_of_total == pytest.approx((p - 1) / (v * m + p - 1), abs=1e-12)
    assert closed_form(sim.setup).over_ideal == pytest.approx(sim.bubble_over_ideal, abs=1e-12)


def test_ultrascale_playbook_bubble_figure() -> None:
    # Ultra-Scale Playbook, pp_bubblesize.html: p = 8, bubble (p - 1)/(v m) runs from 7.00
    # (m = 1, v = 1) to 0.027 (m = 32, v = 8).
    assert simulate(PipelineSetup("1f1b", 8, 1)).bubble_over_ideal == 7.0
    interleaved = simulate(PipelineSetup("interleaved", 8, 32, 8))
    assert round(interleaved.bubble_over_ideal, 3) == 0.027
    assert interleaved.bubble_over_ideal == pytest.approx(7 / 256, rel=1e-12)


def test_zero_bubble_readme_table() -> None:
    # sail-sg/zero-bubble-pipeline-parallelism README, "Comparison of Schedules", with
    # T_F = T_B = T_W: bubble rate 1F1B (p - 1)/m, ZB1P (ZB-H1) (p - 1)/(3m).
    for p, m in ((4, 8), (8, 24), (16, 64)):
        assert simulate(PipelineSetup("1f1b", p, m)).bubble_over_ideal == pytest.approx(
            (p - 1) / m, rel=1e-12
        )
        assert simulate(PipelineSetup("zb-h1", p, m)).bubble_over_ideal == pytest.approx(
            (p - 1) / (3 * m), rel=1e-12
        )


@settings(max_examples=80, deadline=None)
@given(p=st.integers(1, 8), extra=st.integers(0, 12), tf=times, tb=times, tw=times)
def test_zb_h1_bubble_is_the_papers_expression_while_w_is_short(
    p: int, extra: int, tf: float, tb: float, tw: float
) -> None:
    # Qi et al., arXiv:2401.10241, Section 2.1: ZB-H1's bubble is (p - 1)(T_F + T_B - T_W).
    # In this simulation that holds while W <= min(F, B) (and m >= p); a longer W no longer
    # fits the waits it fills, and the bubble is (p - 1) max(F + B - W, F, B).
    m = p + extra
    setup = PipelineSetup("zb-h1", p, m, t_f=tf, t_b=tb, t_w=tw)
    measured = bubble_time(setup)
    assert measured == pytest.approx((p - 1) * max(tf + tb - tw, tf, tb), abs=1e-9)
    cf = closed_form(setup)
    assert cf.exact == (tw <= min(tf, tb))
    if cf.exact:
        assert measured == pytest.approx(cf.bubble_time, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(2, 8), m=st.integers(1, 24), tf=times, tb=times, tw=times)
def test_zb_h1_bubble_is_smaller_than_1f1b(p: int, m: int, tf: float, tb: float, tw: float) -> None:
    zb = simulate(PipelineSetup("zb-h1", p, m, t_f=tf, t_b=tb, t_w=tw))
    one = simulate(PipelineSetup("1f1b", p, m, t_f=tf, t_b=tb, t_w=tw))
    assert zb.total_time < one.total_time
    assert zb.bubble_over_ideal < one.bubble_over_ideal
    # ...at no more peak memory than 1F1B's first stage.
    assert max(zb.peak_in_flight) <= max(one.peak_in_flight)


@pytest.mark.parametrize("schedule", SCHEDULES)
@settings(max_examples=25, deadline=None)
@given(p=st.integers(2, 6), groups=st.integers(1, 10), tf=times, tb=times, tw=times)
def test_bubble_falls_towards_zero_as_micro_batches_grow(
    schedule: str, p: int, groups: int, tf: float, tb: float, tw: float
) -> None:
    def bubble(m: int) -> float:
        setup = PipelineSetup(schedule, p, m, 2, tf, tb, tw)  # type: ignore[arg-type]
        return simulate(setup).bubble_over_ideal

    # Multiples of p keep every schedule valid, interleaved included.
    m = groups * p
    assert bubble(m + p) < bubble(m)
    assert bubble(64 * p) < bubble(m) and bubble(64 * p) <= (p - 1) / 64


# In-flight micro-batches, against app.calc.activations.


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize(("p", "m"), [(2, 1), (2, 5), (4, 3), (4, 8), (8, 8), (8, 20)])
def test_in_flight_matches_activations_module(schedule: str, p: int, m: int) -> None:
    sim = simulate(PipelineSetup(schedule, p, m))  # type: ignore[arg-type]
    expected = [m if schedule == "gpipe" else min(p - i, m) for i in range(p)]
    assert sim.peak_in_flight == expected
    assert sim.peak_in_flight == [in_flight_microbatches(schedule, p, m, stage=i) for i in range(p)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("p", "m", "v"), [(2, 2, 2), (2, 6, 3), (4, 4, 2), (4, 8, 2), (4, 12, 4), (8, 16, 3)]
)
def test_interleaved_in_flight_matches_activations_module(p: int, m: int, v: int) -> None:
    sim = simulate(PipelineSetup("interleaved", p, m, v))
    # Stage 0 always: p (1 + (p - 1)/(p v)) micro-batches' worth (Korthikanti Section 4.2.3).
    assert sim.peak_in_flight[0] == pytest.approx(in_flight_microbatches("interleaved", p, m, v))
    if m > p:
        # Every stage, once the warm-up is not the whole step (Megatron runs m = p all
        # forwards first, so later stages then hold all p; activations.py models stage 0).
        for i in range(p):
            expected = in_flight_microbatches("interleaved", p, m, v, stage=i)
            assert sim.peak_in_flight[i] == pytest.approx(expected)


@pytest.mark.parametrize(("p", "m"), [(2, 1), (4, 2), (6, 5), (6, 6), (6, 12), (8, 30)])
def test_zb_h1_holds_as_much_as_1f1b_first_stage_on_every_stage(p: int, m: int) -> None:
    # Qi et al., Section 2.1: ZB-H1 keeps 1F1B's peak memory. Stage i holds 1F1B's
    # min(p - i, m) plus the weight gradients it holds back: min(p, m) on every stage.
    sim = simulate(PipelineSetup("zb-h1", p, m))
    assert sim.peak_in_flight == [min(p, m)] * p
    assert max(sim.peak_in_flight) == max(simulate(PipelineSetup("1f1b", p, m)).peak_in_flight)


# Every action, every dependency.

setups = st.builds(
    PipelineSetup,
    schedule=st.sampled_from(SCHEDULES),
    stages=st.integers(1, 6),
    microbatches=st.integers(1, 12),
    chunks=st.integers(2, 4),
    t_f=times,
    t_b=times,
    t_w=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    t_p2p=st.sampled_from([0.0, 0.1, 0.5, 2.0]),
).filter(lambda s: not schedule_problems(s))


@settings(max_examples=150, deadline=None)
@given(setups)
def test_every_action_runs_once_and_respects_its_dependencies(setup: PipelineSetup) -> None:
    sim = simulate(setup)
    p, v = setup.stages, setup.virtual_chunks
    ends = {}
    for stage, row in enumerate(sim.timeline):
        previous_end = 0.0
        for b in row:
            assert b.start >= previous_end - 1e-12  # one action at a time on a GPU
            previous_end = b.end
            ends[(b.kind, b.microbatch, b.chunk * p + stage)] = (b.start, b.end)
    kinds = ("F", "B", "W") if setup.schedule == "zb-h1" else ("F", "BW")
    assert len(ends) == len(kinds) * setup.microbatches * p * v == sum(map(len, sim.timeline))
    last = p * v - 1
    hop = setup.t_p2p if p > 1 else 0.0
    for (kind, mb, j), (start, _end) in ends.items():
        if kind == "F" and j > 0:
            assert start >= ends[("F", mb, j - 1)][1] + hop - 1e-9
        if kind in ("B", "BW"):
            assert start >= ends[("F", mb, j)][1] - 1e-9
            if j < last:
                assert start >= ends[(kind, mb, j + 1)][1] + hop - 1e-9
        if kind == "W":
            assert start >= ends[("B", mb, j)][1] - 1e-9
    assert sim.total_time == max(end for _s, end in ends.values())
    assert sim.idle_time == pytest.approx(p * sim.total_time - sim.busy_time)


def test_exact_fractions_go_through() -> None:
    # The simulator only adds and compares, so exact fractions give exact answers.
    setup = PipelineSetup("interleaved", 3, 6, 2, Fraction(1), Fraction(2, 3), Fraction(1, 3))
    assert bubble_time(setup) == Fraction(2) * (1 + Fraction(2, 3) + Fraction(1, 3)) / 2


# Impossible inputs.


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (PipelineSetup("interleaved", 4, 6, 2), "multiple of the stages"),
        (PipelineSetup("interleaved", 4, 8, 1), "at least 2 model chunks"),
        (PipelineSetup("interleaved", 1, 4, 2), "at least 2 pipeline stages"),
        (PipelineSetup("1f1b", 0, 4), "at least 1"),
        (PipelineSetup("1f1b", 2, 4, t_f=0), "must be positive"),
        (PipelineSetup("nope", 2, 4), "schedule must be one of"),  # type: ignore[arg-type]
    ],
)
def test_impossible_set_ups_raise(setup: PipelineSetup, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        simulate(setup)


def test_query_rejects_what_cannot_be_drawn() -> None:
    with pytest.raises(ValueError, match="at most 8,192"):
        PipelineQuery(pp=32, microbatches=128, virtual_stages=4)
    with pytest.raises(ValueError, match="multiple of the stages"):
        PipelineQuery(schedule="interleaved", pp=4, microbatches=6)
    PipelineQuery(schedule="zb-h1", pp=32, microbatches=128, virtual_stages=2)


def test_result_carries_both_bubbles_labelled() -> None:
    result = pipeline_result(PipelineQuery(schedule="1f1b", pp=4, microbatches=8))
    assert result["bubble_over_ideal"] == 0.375
    assert result["bubble_fraction_of_total"] == pytest.approx(3 / 11)
    assert result["closed_form"]["over_ideal"] == 0.375
    assert [row["schedule"] for row in result["comparison"]] == list(SCHEDULES)
    assert pipeline_result(PipelineQuery(compare=False))["comparison"] == []


def test_text_gantt_by_hand() -> None:
    step, lines = text_gantt(simulate(PipelineSetup("gpipe", 2, 2, t_f=1, t_b=1, t_w=1)))
    assert step == 1
    assert lines == [
        "stage  0 F  |12.......|",
        "stage  0 BW |.....1122|",
        "stage  1 F  |.12......|",
        "stage  1 BW |...1122..|",
    ]


def test_interleaved_first_stage_holds_korthikantis_closed_form() -> None:
    from app.calc.pipeline import PipelineSetup, interleaved_first_stage_in_flight, simulate

    # p (1 + (p-1)/(p v)) = 4 (1 + 3/8) = 5.5 micro-batches' worth, as the simulation finds
    assert interleaved_first_stage_in_flight(4, 2) == 5.5
    setup = PipelineSetup(schedule="interleaved", stages=4, microbatches=8, chunks=2)
    assert simulate(setup).peak_in_flight[0] == 5.5


# Unequal stages: the slowest stage sets the pace (Llama 3, arXiv:2407.21783, Section 3.3.2).


def test_one_slow_stage_gives_the_flow_shop_step_by_hand() -> None:
    # p = 2, m = 2, F = B = W = 1, stage 1 twice as slow. Stage 0: F1 0-1, F2 1-2; stage 1:
    # F1 1-3, BW1 3-7, F2 7-9, BW2 9-13; stage 0: BW1 7-9, BW2 13-15. Step 15 =
    # (1 + 1 + 1)(1 + 2 + (2 - 1) 2) = 3 * 5.
    setup = PipelineSetup("1f1b", 2, 2, t_f=1, t_b=1, t_w=1, stage_scale=(1, 2))
    sim = simulate(setup)
    assert sim.total_time == 15
    assert spans(sim.timeline[1]) == [
        ("F", 0, 0, 1, 3), ("BW", 0, 0, 3, 7), ("F", 1, 0, 7, 9), ("BW", 1, 0, 9, 13),
    ]  # fmt: skip
    assert imbalanced_step(setup) == 15
    assert sim.busy_time == 2 * 3 * (1 + 2)  # m (F + B + W) per unit of scale, summed


@settings(max_examples=80, deadline=None)
@given(
    schedule=st.sampled_from(["gpipe", "1f1b"]),
    scales=st.lists(st.sampled_from([0.5, 1.0, 1.25, 2.0, 3.0]), min_size=2, max_size=6),
    m=st.integers(1, 12),
    t_f=times,
    t_b=times,
    t_w=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_the_step_is_sum_plus_m_minus_one_times_the_slowest_where_exact(
    schedule: str, scales: list[float], m: int, t_f: float, t_b: float, t_w: float
) -> None:
    setup = PipelineSetup(schedule, len(scales), m, t_f=t_f, t_b=t_b, t_w=t_w,
                          stage_scale=tuple(scales))  # fmt: skip
    bound = (t_f + t_b + t_w) * (sum(scales) + (m - 1) * max(scales))
    step = simulate(setup).total_time
    if schedule == "gpipe" or scales[-1] == max(scales):
        assert step == pytest.approx(bound)
        assert imbalanced_step(setup) == pytest.approx(bound)
    else:  # 1F1B's warm-up forwards fill part of an earlier slow stage's wait
        assert step <= bound + 1e-9
        assert imbalanced_step(setup) is None


def test_1f1b_with_a_slow_first_stage_beats_the_flow_shop_bound_by_hand() -> None:
    # p = 2, m = 2, F = B = 0.25, W = 0, stage 0 twice as slow as stage 1: stage 0 runs
    # F1 0-0.25, F2 0.25-0.5, BW1 0.5-0.75, BW2 0.75-1; the bound says 0.5 (1.5 + 1) = 1.25.
    setup = PipelineSetup("1f1b", 2, 2, t_f=0.25, t_b=0.25, t_w=0, stage_scale=(1, 0.5))
    assert simulate(setup).total_time == 1.0
    assert imbalanced_step(setup) is None
    assert imbalanced_step(replace(setup, schedule="gpipe")) == 1.25


def test_llama3_8b_on_four_stages_with_its_lm_head() -> None:
    # 32 layers on 4 stages, the LM head worth 2.41 layers on the last: 8, 8, 8, 10.41 layer
    # units per micro-batch; m = 16: 34.41 + 15 x 10.41 = 190.56. Moving two layers off the
    # last stage (8, 9, 9, 8.41): at most 34.41 + 15 x 9 = 169.41
    # (content/cards/pipeline-stage-imbalance).
    even = PipelineSetup("1f1b", 4, 16, t_f=1 / 3, t_b=1 / 3, t_w=1 / 3,
                         stage_scale=(8, 8, 8, 10.41))  # fmt: skip
    moved = replace(even, stage_scale=(8, 9, 9, 8.41))
    assert simulate(even).total_time == pytest.approx(190.56) == imbalanced_step(even)
    # The slowest stages are now in the middle: 1F1B beats the bound 169.41 slightly.
    assert simulate(moved).total_time == pytest.approx(168.82)
    assert imbalanced_step(replace(moved, schedule="gpipe")) == pytest.approx(169.41)


def test_equal_scales_change_nothing_but_the_unit() -> None:
    plain = simulate(PipelineSetup("interleaved", 4, 8, 2))
    scaled = simulate(PipelineSetup("interleaved", 4, 8, 2, stage_scale=(2, 2, 2, 2)))
    assert scaled.total_time == 2 * plain.total_time
    assert scaled.bubble_over_ideal == plain.bubble_over_ideal
    assert closed_form(PipelineSetup("1f1b", 4, 8, stage_scale=(1, 1, 1, 1))).exact


def test_unequal_stages_make_the_closed_form_inexact_and_every_schedule_slower() -> None:
    for schedule in SCHEDULES:
        base = PipelineSetup(schedule, 4, 8, 2)
        slow = replace(base, stage_scale=(1, 1, 1, 1.5))
        assert not closed_form(slow).exact
        assert simulate(slow).total_time > simulate(base).total_time
    assert imbalanced_step(PipelineSetup("zb-h1", 4, 8, stage_scale=(1, 1, 1, 2))) is None
    assert imbalanced_step(PipelineSetup("1f1b", 4, 8, t_p2p=0.1)) is None


@pytest.mark.parametrize(
    ("scales", "words"),
    [((1, 1), "one relative stage time per stage: 2 given for 4 stages"),
     ((1, 1, 0, 1), "must be positive")],
)  # fmt: skip
def test_bad_stage_times_are_refused_in_words(scales: tuple, words: str) -> None:
    problems = schedule_problems(PipelineSetup("1f1b", 4, 8, stage_scale=scales))
    assert any(words in p for p in problems)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", ()), (None, ()), ("1,1,1,1.3", (1, 1, 1, 1.3)), (" 2, 0.5 ", (2, 0.5))],
)
def test_stage_times_are_read_from_text(text: str | None, expected: tuple) -> None:
    assert parse_stage_times(text) == expected


@pytest.mark.parametrize("text", ["1,a", "1,-1", "nan,1", "inf,1"])
def test_unreadable_stage_times_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="relative stage times"):
        parse_stage_times(text)


def test_result_carries_the_stage_factors_and_the_imbalanced_step() -> None:
    result = pipeline_result(
        PipelineQuery(schedule="1f1b", pp=2, microbatches=2, stage_times="1,2", compare=False)
    )
    assert result["stage_scale"] == [1, 2]
    assert result["total_time"] == result["imbalanced_step"] == 15
    assert result["ideal_time"] == 2 * 3 * 2  # the slowest stage's work
    assert not result["closed_form"]["exact"]
