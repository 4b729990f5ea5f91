"""The backward peak of a residual MLP stack, derived by hand, and its laws."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.activations import mlp_stack_saved_bytes
from app.calc.checkpointing import BackwardPeak, mlp_stack_backward_peak

# 4 blocks, 64 tokens, width 32, hidden 128, fp32: u = 64*32*4 = 8,192 B (a block input),
# v = 4u = 32,768 B (a GeLU tensor), s = u + 2v = 73,728 B (what one block saves).
U, V, S = 8_192, 32_768, 73_728
GRADIENTS = U + V  # the last block's output gradient and its GeLU output's gradient
LOSS = 2 * 4  # the loss and its seed gradient


def test_without_recompute_everything_saved_is_alive_in_the_last_block() -> None:
    assert mlp_stack_backward_peak(4, 64, 32, 128, 4) == BackwardPeak(
        kept=4 * S,
        recomputed=0,
        gradients=GRADIENTS,
        loss=LOSS,
        segment=4,
        first_block=4,
        last_block=4,
    )
    assert mlp_stack_backward_peak(4, 64, 32, 128, 4).total == 335_880


def test_every_layer_checkpointed_keeps_four_inputs_and_rebuilds_one_block() -> None:
    peak = mlp_stack_backward_peak(4, 64, 32, 128, 4, segment_layers=1)
    assert (peak.kept, peak.recomputed, peak.segment) == (4 * U, S - U, 4)
    assert peak.total == 32_768 + 65_536 + 40_960 + 8 == 139_272


def test_two_segments_peak_in_the_last_with_both_its_blocks_rebuilt() -> None:
    peak = mlp_stack_backward_peak(4, 64, 32, 128, 4, segment_layers=2)
    assert (peak.kept, peak.recomputed) == (2 * U, 2 * S - U)
    assert (peak.segment, peak.first_block, peak.last_block) == (2, 3, 4)
    assert peak.total == 196_616


def test_a_short_last_segment_moves_the_peak_to_the_one_before() -> None:
    # segments of 3: blocks 1-3 and 4. Segment 2: 2 inputs + (s - u); segment 1: 1 input +
    # (3s - u), larger since 2s > u.
    peak = mlp_stack_backward_peak(4, 64, 32, 128, 4, segment_layers=3)
    assert (peak.segment, peak.first_block, peak.last_block) == (1, 1, 3)
    assert peak.kept + peak.recomputed == U + 3 * S - U


def test_one_segment_of_the_whole_stack_peaks_as_high_as_no_recompute() -> None:
    assert (
        mlp_stack_backward_peak(4, 64, 32, 128, 4, segment_layers=4).total
        == mlp_stack_backward_peak(4, 64, 32, 128, 4).total
    )


def test_a_segment_longer_than_the_stack_is_refused() -> None:
    with pytest.raises(ValueError, match="segment_layers must be from 1 to 4"):
        mlp_stack_backward_peak(4, 64, 32, 128, 4, segment_layers=5)


@st.composite
def stacks(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    layers = draw(st.integers(1, 64))
    width = draw(st.integers(1, 4096))
    hidden = draw(st.integers(1, 4)) * width
    return layers, draw(st.integers(1, 8192)), width, hidden, draw(st.sampled_from([1, 2, 4]))


@given(stacks(), st.data())
def test_recompute_never_raises_the_peak(stack: tuple[int, ...], data: st.DataObject) -> None:
    k = data.draw(st.integers(1, stack[0]))
    assert mlp_stack_backward_peak(*stack, k).total <= mlp_stack_backward_peak(*stack).total


@given(stacks(), st.data())
def test_the_peak_is_the_saved_bytes_plus_at_most_one_rebuilt_segment(
    stack: tuple[int, ...], data: st.DataObject
) -> None:
    # Chen et al. Section 4: checkpoints + one segment. The checkpoints alive at the peak are
    # at most all of them, the rebuilt tensors at most k blocks' saved tensors.
    k = data.draw(st.integers(1, stack[0]))
    layers, tokens, width, hidden, value = stack
    peak = mlp_stack_backward_peak(*stack, k)
    one_segment = mlp_stack_saved_bytes(k, tokens, width, hidden, value)
    assert peak.kept <= mlp_stack_saved_bytes(*stack, k)
    assert peak.recomputed <= one_segment
    assert peak.recomputed + peak.kept >= one_segment


@given(stacks(), st.data())
def test_longer_segments_save_fewer_bytes_but_rebuild_more(
    stack: tuple[int, ...], data: st.DataObject
) -> None:
    k = data.draw(st.integers(1, stack[0]))
    longer = data.draw(st.integers(k, stack[0]))
    assert mlp_stack_saved_bytes(*stack, longer) <= mlp_stack_saved_bytes(*stack, k)
    rebuilt = mlp_stack_backward_peak(*stack, longer).recomputed
    assert rebuilt >= mlp_stack_backward_peak(*stack, k).recomputed
