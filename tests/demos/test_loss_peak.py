"""The loss's peak over the logits, measured tensor by tensor on CPU (demos/live_bytes.py), is
the performance profile's default logit_bytes (app.calc.performance): what the planner adds to
the last stage's memory beyond the fp32 copy of the logits that app.calc.activations counts."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from app.calc.activations import LOGITS_BYTES
from app.calc.performance import PARAMETERS
from demos.live_bytes import LiveBytesTrace


def _loss_peak_bytes(tokens: int, hidden: int, vocab: int) -> tuple[int, int]:
    """Peak bytes alive in forward and in backward of an output projection and cross-entropy
    on fp32 logits, as a training loop runs them (the logits kept, as a model's output keeps
    them), the inputs and weights left out."""
    torch.manual_seed(0)
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(vocab, hidden, dtype=torch.bfloat16, requires_grad=True)
    targets = torch.randint(0, vocab, (tokens,))
    with LiveBytesTrace(exclude=[x, w, targets]) as trace:
        trace.mark("forward")
        logits = x @ w.t()
        loss = F.cross_entropy(logits.float(), targets)
        trace.mark("backward")
        loss.backward()
    return trace.peak(["forward"]).bytes_, trace.peak(["backward"]).bytes_


def test_the_loss_peaks_in_backward_at_the_profiles_bytes_per_logit() -> None:
    tokens, hidden, vocab = 256, 64, 4096
    forward, backward = _loss_peak_bytes(tokens, hidden, vocab)
    logits = tokens * vocab
    # Forward: bf16 logits 2 + fp32 copy 4 + log-softmax 4; the loss and nll's total weight
    # are two fp32 scalars.
    assert forward == 10 * logits + 2 * 4
    # Backward, at log-softmax's backward: the bf16 logits 2, the saved log-softmax 4, nll's
    # gradient 4 and log-softmax's gradient 4 (the fp32 copy died after forward), and two
    # fp32 scalars.
    per_logit = PARAMETERS["logit_bytes"].default
    assert per_logit == 14
    assert backward - 2 * 4 == per_logit * logits
    # What the planner adds on the last stage: the peak over the fp32 copy already counted.
    assert (per_logit - LOGITS_BYTES) * logits == backward - 2 * 4 - LOGITS_BYTES * logits


def test_the_peak_scales_with_the_logits_not_the_hidden_size() -> None:
    small = _loss_peak_bytes(128, 32, 2048)[1]
    wide = _loss_peak_bytes(128, 256, 2048)[1]
    assert small == wide  # the hidden size never reaches the loss's temporaries
