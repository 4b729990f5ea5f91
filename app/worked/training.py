"""Training memory, explained beyond its terms: the assumptions panel (each constant the
calculator takes, its value and its source) and why a higher ZeRO stage can need more memory
than the one below it. The training-memory calculator's page shows both.

The terms themselves, each with its formula symbolic and substituted, come from
app.calc.training; this module words what sits around them.
"""

from __future__ import annotations

from app.calc.gpus import GPUS
from app.calc.precision import bytes_per_param
from app.calc.training import MemoryReport
from app.calc.training_query import TrainingQuery
from app.formatting import memory
from app.i18n import N_, gettext


def zero_stage_note(lower: MemoryReport, higher: MemoryReport, unit: str) -> str:
    """Why one more ZeRO stage needs more memory: its buffer outweighs what it shards."""
    k = higher.setup.parallel.zero_stage
    values = {
        "k": k,
        "lower": k - 1,
        "gathered": memory(higher.term("buffers").gpu_bytes, unit),
        "bucket": memory(lower.term("buffers").gpu_bytes, unit),
    }
    if k == 2:  # ZeRO-1's buckets are the gradients' views (or their copy, never smaller)
        template = gettext(
            "ZeRO-2 needs more than ZeRO-1 here: its %(gathered)s reduce bucket outweighs the "
            "gradient memory that sharding saves."
        )
    else:
        template = gettext(
            "ZeRO-%(k)s needs more than ZeRO-%(lower)s here: it holds a %(gathered)s "
            "buffer of whole layers gathered ahead of use, where ZeRO-%(lower)s keeps a "
            "%(bucket)s gradient bucket, and that outweighs what sharding one more state "
            "saves."
        )
    return template % values


def assumptions(query: TrainingQuery) -> list[tuple[str, str, str]]:
    """(constant, value, source) rows for the assumptions panel."""
    b = bytes_per_param(query.recipe, query.optimizer)
    gpu = GPUS[query.gpu]
    fp8 = (
        [(N_("FP8 weight copies, bytes per parameter"), f"{b.fp8_copies:g}", b.fp8_copies_source)]
        if b.fp8_copies
        else []
    )
    return [
        (N_("Weights, bytes per parameter"), f"{b.weights:g}", b.weights_source),
        *fp8,
        (N_("Gradients, bytes per parameter"), f"{b.grads:g}", b.grads_source),
        (N_("Master weights, bytes per parameter"), f"{b.master:g}", b.master_source),
        (N_("Optimizer states, bytes per parameter"), f"{b.optimizer:g}", b.optimizer_source),
        (N_("GPU memory"), memory(gpu.memory_bytes, query.unit), gpu.source),
        (N_("Runtime overhead"), memory(query.overhead_gb * 1e9, query.unit),
         "CUDA context and communicator buffers: 1–2 GB in the Ultra-Scale Playbook; editable"),
        (N_("Gradient bucket"), f"{query.bucket_mb:g} MB",
         "ZeRO-2's reduce bucket; PyTorch DDP's bucket_cap_mb default is 25 MiB; editable"),
        (N_("DDP copies gradients into its buckets"), _yes_no(query.grad_bucket_copy),
         "DDP and ZeRO-1: torch DDP's gradient_as_bucket_view=False (its default) keeps the "
         "buckets beside the gradients, a second copy; Megatron-LM's gradients are views of "
         "its buckets (measured by the ZeRO demo)"),
    ]  # fmt: skip


def _yes_no(flag: bool) -> str:
    return gettext("yes") if flag else gettext("no")
