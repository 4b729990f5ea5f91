"""A layout as app.calc.training's setup: what the planner's memory per GPU is computed from,
and what a page shows term by term for one layout."""

from __future__ import annotations

from app.calc.activations import ActivationSetup
from app.calc.planner.request import Layout, PlanRequest
from app.calc.training_types import Parallelism, TrainingSetup


def training_setup(request: PlanRequest, layout: Layout, microbatches: int = 1) -> TrainingSetup:
    """The app.calc.training setup of a layout: what its memory report is computed from.

    ZB-H1 keeps 1F1B's peak activations (Qi et al. arXiv:2401.10241 Section 2.1), so it is
    passed to the memory calculator as 1F1B.
    """
    memory_schedule = "1f1b" if layout.schedule == "zb-h1" or layout.pp == 1 else layout.schedule
    return TrainingSetup(
        model=request.model,
        parallel=Parallelism(
            dp=layout.dp,
            tp=layout.tp,
            pp=layout.pp,
            ep=layout.ep,
            cp=layout.cp,
            zero_stage=layout.zero_stage,
            distributed_optimizer=layout.distributed_optimizer,
        ),
        activations=ActivationSetup(
            seq_len=request.seq_len,
            micro_batch=layout.micro_batch,
            tp=layout.tp,
            sp=layout.sp,
            cp=layout.cp,
            recompute=layout.recompute,  # type: ignore[arg-type]
            flash_attention=request.flash_attention,
            dropout=request.dropout,
            distribute_saved=request.distribute_saved_activations,
        ),
        recipe=request.recipe,
        optimizer=request.optimizer,
        microbatches=microbatches,
        schedule=memory_schedule,
        virtual_stages=layout.virtual_stages if memory_schedule == "interleaved" else 1,
        overhead_bytes=request.overhead_bytes,
    )
