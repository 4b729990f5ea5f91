"""The calculators as a JSON API, documented in the OpenAPI schema at /docs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query

from app.calc.model import count_params, from_hf_config
from app.calc.training_query import TrainingQuery, training_result
from app.calculators.memory_view import memory_result
from app.calculators.schemas import (
    MemoryQuery,
    MemoryResult,
    ModelFromConfig,
    ModelShape,
    TrainingMemoryResult,
)

router = APIRouter(prefix="/api/calc", tags=["calculators"])


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
