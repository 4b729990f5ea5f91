"""Peak activation bytes during backward of a residual MLP stack, with and without recompute.

The stack is the one `mlp_stack_saved_bytes` describes: L blocks x + Linear(d -> h) -> GeLU ->
Linear(h -> d) on T rows, B bytes a value. Write u = T*d*B (one block input or output),
v = T*h*B (one hidden tensor) and s = u + 2v (what one block saves: its input, the GeLU input
and the GeLU output). The loss is the mean of the last output, whose backward allocates one
output-sized gradient and nothing else.

Backward visits blocks last to first. While it is inside a block, the bytes alive are what
forward kept for the blocks not yet reached, that block's own saved tensors, and the
gradients in flight. The most of those is at the block's first backward op, the second
linear's grad-input: it allocates the GeLU output's gradient (v) while the gradient of the
block's output (u) and every saved tensor of the block are still alive. The next op, GeLU's
backward, allocates as much (the GeLU input's gradient) as it frees (the second linear has
released the GeLU output), so the peak ties there and falls after. The loss and the seed
gradient autograd starts from, one value each (2B), stay alive throughout.

Without recompute, the peak is therefore in the last block, with everything forward saved
still alive:

    peak_none = L*s + (u + v) + 2B.

With checkpointing in S = ceil(L/k) segments (Chen et al., "Training Deep Nets with Sublinear
Memory Cost", arXiv:1604.06174, Section 4: the checkpoints plus one segment's internal memory;
Korthikanti et al., arXiv:2205.05198, Section 5 and Table 2 for full recompute, k = 1, which
keeps only each layer's input and rebuilds one layer at a time), backward entering segment j
(of n_j blocks) first reruns its forward from its checkpoint. The recompute rebuilds every
tensor the segment's blocks save (n_j*s less the input, which is the checkpoint itself); the
segment's last output is not rebuilt, since torch stops a recompute once the last saved tensor
exists (`torch.utils.checkpoint`, early stop, the default). The checkpoints of segments 1..j
are still alive, those of later segments are freed. The peak of segment j is at its last
block, as above:

    peak_j = j*u + (n_j*s - u) + (u + v) + 2B = (j - 1)*u + n_j*s + (u + v) + 2B.

Segments 1..S-1 hold k blocks and the last one n_S = L - (S-1)k <= k, so the largest is
segment S when it is full and segment S-1 when it is not ((k - n_S)*s > u). With k = L this
is peak_none: one checkpoint rebuilds what no recompute keeps. Since (j-1)*u <= (L-n_j)*s,
recompute never raises the peak.

Parameter gradients are left out: every mode writes the same ones, and they are counted with
the model's state, not its activations.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.activations import mlp_stack_saved_bytes

LOSS_VALUES = 2  # the loss and the seed gradient backward starts from


@dataclass(frozen=True)
class BackwardPeak:
    """The most activation bytes alive during backward, term by term, and where it is."""

    kept: int  # forward's tensors still waiting: every block's saved tensors, or checkpoints
    recomputed: int  # the rebuilt tensors of the segment being differentiated (0 without)
    gradients: int  # the gradient of the block's output (u) and of its GeLU output (v)
    loss: int  # the loss and its seed gradient, one value each
    segment: int  # 1-based: a segment with checkpointing, a block without
    first_block: int  # 1-based, the blocks of that segment
    last_block: int

    @property
    def total(self) -> int:
        return self.kept + self.recomputed + self.gradients + self.loss


def mlp_stack_backward_peak(
    layers: int,
    tokens: int,
    width: int,
    hidden_width: int,
    bytes_per_value: int,
    segment_layers: int | None = None,
) -> BackwardPeak:
    """The backward peak of the residual MLP stack; the module docstring derives it."""
    saved_per_block = mlp_stack_saved_bytes(1, tokens, width, hidden_width, bytes_per_value)
    block_io = tokens * width * bytes_per_value  # u
    gradients = block_io + tokens * hidden_width * bytes_per_value  # u + v
    loss = LOSS_VALUES * bytes_per_value
    if segment_layers is None:
        return BackwardPeak(layers * saved_per_block, 0, gradients, loss, layers, layers, layers)
    if not 1 <= segment_layers <= layers:
        raise ValueError(f"segment_layers must be from 1 to {layers}, got {segment_layers}")
    segments = -(-layers // segment_layers)
    last_blocks = layers - (segments - 1) * segment_layers
    segment = segments if last_blocks == segment_layers else segments - 1
    blocks = last_blocks if segment == segments else segment_layers
    first_block = (segment - 1) * segment_layers + 1
    return BackwardPeak(
        kept=segment * block_io,
        recomputed=blocks * saved_per_block - block_io,
        gradients=gradients,
        loss=loss,
        segment=segment,
        first_block=first_block,
        last_block=first_block + blocks - 1,
    )
