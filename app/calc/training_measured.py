"""Measured (setup.measured, the performance profile's memory parameters, app.calc.performance):
three more terms, beside the textbook ones of app.calc.training, for what a GPU reports. On the
stage that holds the loss (pp = 1 here) the loss's temporaries beyond the fp32 logits the
activations count: (logit_bytes - 4) per logit element, 14 - 4 for PyTorch's cross-entropy on
fp32 logits (tests/demos/test_loss_peak.py); NCCL's buffers, nccl_bytes per communicator (one
per parallel group of more than one GPU, two for the pipeline's neighbours), with the overhead
then standing for the CUDA context alone; and the caching allocator's reserve over all that
it hands out, allocator_fraction of the other terms.
"""

from __future__ import annotations

from app.calc.activations import LOGITS_BYTES
from app.calc.model import ModelConfig
from app.calc.training_types import Term, TrainingSetup, tex, tex_gb


def communicators(dp: int, tp: int, pp: int, cp: int, ep: int) -> int:
    """NCCL communicators one GPU belongs to: one per parallel group of more than one GPU (the
    ZeRO group is dp * cp), two for the pipeline's sends to the previous and the next stage."""
    return sum(1 for k in (tp, cp, ep, dp * cp) if k > 1) + 2 * (pp > 1)


def loss_extra_bytes(tokens: float, vocab: int, tp: int, logit_bytes: float) -> float:
    """The loss's temporaries beyond the fp32 logits app.calc.activations counts, for `tokens`
    on one GPU with the vocabulary split over tp (module docstring)."""
    return (logit_bytes - LOGITS_BYTES) * (tokens * vocab / tp)


def measured_terms(
    setup: TrainingSetup, cfg: ModelConfig, terms: list[Term], last_stage: bool
) -> list[Term]:
    """The terms a GPU reports beyond the textbook ones (module docstring)."""
    extra, p, act = setup.measured, setup.parallel, setup.activations
    assert extra is not None
    found = []
    source = "app.calc.performance (the default profile's value unless a profile says)"
    if last_stage:
        logits = act.seq_len / p.cp * act.micro_batch * cfg.vocab / p.tp
        loss = loss_extra_bytes(act.seq_len / p.cp * act.micro_batch, cfg.vocab, p.tp,
                                extra.logit_bytes)  # fmt: skip
        found.append(
            Term(
                key="loss", label="Loss temporaries beyond the fp32 logits", gpu_bytes=loss,
                cpu_bytes=0.0, formula=r"(b_{\text{logit}} - 4)\,\frac{s\,b\,V}{c\,t}",
                render=lambda: (
                    rf"({tex(extra.logit_bytes)} - 4)\times{tex(logits)} = {tex_gb(loss)}"
                ),
                source="PyTorch cross-entropy on fp32 logits: bf16 logits, log-softmax, its "
                "gradient and nll's, 14 bytes per logit at the peak (tests/demos/"
                f"test_loss_peak.py); {source}",
            )
        )  # fmt: skip
    groups = communicators(p.dp, p.tp, p.pp, p.cp, p.ep)
    nccl = extra.nccl_bytes * groups
    found.append(
        Term(
            key="nccl", label="NCCL buffers", gpu_bytes=nccl, cpu_bytes=0.0,
            formula=r"n_{\text{comm}}\,M_{\text{NCCL}}",
            render=lambda: rf"{groups}\times{tex(extra.nccl_bytes)} = {tex_gb(nccl)}",
            source="one communicator per parallel group of more than one GPU, two for the "
            f"pipeline's neighbours; NCCL_BUFFSIZE per channel and peer; {source}",
        )
    )  # fmt: skip
    allocated = sum(t.gpu_bytes for t in terms) + sum(t.gpu_bytes for t in found)
    reserve = extra.allocator_fraction * allocated
    found.append(
        Term(
            key="allocator", label="Reserved by the caching allocator", gpu_bytes=reserve,
            cpu_bytes=0.0, formula=r"f_{\text{alloc}}\,M_{\text{allocated}}",
            render=lambda: (
                rf"{tex(extra.allocator_fraction)}\times{tex(allocated)} = {tex_gb(reserve)}"
            ),
            source="PyTorch's CUDA caching allocator rounds and splits blocks by size class "
            f"(c10/cuda/CUDACachingAllocator.cpp): reserved over allocated; {source}",
        )
    )  # fmt: skip
    return found
