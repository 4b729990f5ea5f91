"""The calculators as a JSON API, documented in the OpenAPI schema at /docs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query

from app.calc.memory import ZERO_STAGE_NAMES, model_states_all_stages
from app.calc.model import count_params, from_hf_config
from app.calc.training_query import TrainingQuery, training_result
from app.calculators.schemas import (
    MemoryQuery,
    MemoryResult,
    ModelFromConfig,
    ModelShape,
    StageMemory,
    TrainingMemoryResult,
)

router = APIRouter(prefix="/api/calc", tags=["calculators"])


def memory_result(query: MemoryQuery) -> MemoryResult:
    """The API's answer: every ZeRO stage's model states per GPU, from app.calc.memory."""
    stages = model_states_all_stages(query.params, query.dp_degree)
    recipe = stages[0].recipe
    return MemoryResult(
        params=query.params,
        dp_degree=query.dp_degree,
        recipe=recipe.name,
        bytes_per_param={
            "weights": recipe.weight_bytes,
            "grads": recipe.grad_bytes,
            "optimizer": recipe.optimizer_bytes,
        },
        stages=[
            StageMemory(
                zero_stage=s.zero_stage,
                name=ZERO_STAGE_NAMES[s.zero_stage],
                weights_bytes=s.weights_bytes,
                grads_bytes=s.grads_bytes,
                optimizer_bytes=s.optimizer_bytes,
                total_bytes=s.total_bytes,
            )
            for s in stages
        ],
    )


@router.get("/memory", response_model=MemoryResult)
def memory(query: Annotated[MemoryQuery, Query()]) -> MemoryResult:
    """Model-states memory per GPU for ZeRO stages 0-3 (mixed-precision Adam).

    Bytes of weights, gradients and optimizer states each GPU holds, sharded over the
    data-parallel degree as in the ZeRO paper (arXiv:1910.02054, Section 5.1, Figure 1).
    Model states only: no activations, buffers or fragmentation.
    """
    return memory_result(query)


@router.get("/training-memory", response_model=TrainingMemoryResult)
def training(query: Annotated[TrainingQuery, Query()]) -> TrainingMemoryResult:
    """Training memory on the most loaded GPU, every term separate, with formulas and sources.

    Model fields left out come from `preset`. Parallel degrees: dp x tp x pp x cp GPUs; ZeRO
    shards over dp. Activations after Korthikanti et al. (arXiv:2205.05198).
    """
    return TrainingMemoryResult.model_validate(training_result(query))


@router.post("/model/from-hf-config", response_model=ModelFromConfig)
def model_from_hf_config(config: Annotated[dict[str, Any], Body()]) -> ModelFromConfig:
    """Reads a Hugging Face `config.json` (Llama, Mistral, Mixtral, Qwen2, GPT-2 style keys)."""
    try:
        cfg = from_hf_config(config)
        counts = count_params(cfg)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    return ModelFromConfig(
        model=ModelShape(**asdict(cfg)), total_params=counts.total, active_params=counts.active
    )
