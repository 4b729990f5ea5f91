"""Summarising a measured pipeline timeline, and the p2p messages of each schedule."""

from __future__ import annotations

import pytest

from app.calc.pipeline import (
    Block,
    PipelineSetup,
    StageMessages,
    p2p_messages_per_stage,
    simulate,
    timeline_summary,
)


def test_a_measured_timeline_is_shifted_to_start_at_zero_by_hand() -> None:
    # Two stages, one micro-batch, times from a clock that reads 1000 at the first start:
    # stage 0 F 1000-1010, BW 1040-1060; stage 1 F 1012-1022, BW 1022-1038. Step 60; busy
    # 10 + 20 + 10 + 16 = 56; idle 2 * 60 - 56 = 64.
    setup = PipelineSetup("1f1b", 2, 1)
    measured = [
        [Block(0, "F", 0, 0, 1000, 1010), Block(0, "BW", 0, 0, 1040, 1060)],
        [Block(1, "F", 0, 0, 1012, 1022), Block(1, "BW", 0, 0, 1022, 1038)],
    ]
    summary = timeline_summary(setup, measured)
    assert summary.total_time == 60
    assert summary.busy_time == 56
    assert summary.idle_time == 64
    assert summary.bubble_fraction_of_total == 64 / 120
    assert summary.timeline[1][0].start == 12 and summary.timeline[0][1].end == 60
    assert summary.peak_in_flight == [1, 1]


def test_summarising_the_simulators_own_timeline_changes_nothing() -> None:
    sim = simulate(PipelineSetup("interleaved", 4, 8, chunks=2, t_f=1, t_b=1, t_w=1))
    again = timeline_summary(sim.setup, sim.timeline)
    assert again == sim
    # Narayanan et al. Sec. 2.2.2: (p - 1)/(v m) = 3/16 of the ideal time.
    assert again.bubble_over_ideal == pytest.approx(3 / 16)


@pytest.mark.parametrize(
    ("setup", "sends"),
    [
        # An end stage sends m messages (activations or gradients), a middle one 2m.
        (PipelineSetup("gpipe", 4, 8), [8, 16, 16, 8]),
        (PipelineSetup("1f1b", 2, 8), [8, 8]),
        (PipelineSetup("zb-h1", 3, 4), [4, 8, 4]),
        # Interleaved, v = 2, p = 2, m = 8: rank 0 holds virtual stages 0 (one hop) and 2
        # (two hops), 24 messages; feasibility §7 measured 24 x 16,384 B per rank.
        (PipelineSetup("interleaved", 2, 8, chunks=2), [24, 24]),
        (PipelineSetup("interleaved", 4, 4, chunks=2), [12, 16, 16, 12]),
        (PipelineSetup("gpipe", 1, 5), [0]),
    ],
)
def test_p2p_messages_per_stage_by_hand(setup: PipelineSetup, sends: list[int]) -> None:
    assert p2p_messages_per_stage(setup) == [StageMessages(s, s) for s in sends]
