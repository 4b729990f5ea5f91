"""The calculators as a JSON API, documented in the OpenAPI schema at /docs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query
from fastapi.responses import Response

from app.calc.deepspeed_estimate import (
    ADDITIONAL_BUFFER_FACTOR,
    ZERO2_SOURCE,
    ZERO3_SOURCE,
    DeepSpeedEstimate,
    zero2_all_cold,
    zero3_all_cold,
)
from app.calc.memory import (
    ZERO_STAGE_NAMES,
    largest_model_all_stages,
    model_states_all_stages,
    precision_recipe,
)
from app.calc.model import count_params, from_hf_config
from app.calc.training_query import TrainingQuery, training_result
from app.calculators.results import kept_answer
from app.calculators.schemas import (
    DeepSpeedOut,
    DeepSpeedRow,
    LargestModelOut,
    MemoryQuery,
    MemoryResult,
    ModelFromConfig,
    ModelShape,
    StageMemory,
    TrainingMemoryResult,
)
from app.route_guards import GuardedRoute

router = APIRouter(route_class=GuardedRoute, prefix="/api/calc", tags=["calculators"])


def _deepspeed_row(row: DeepSpeedEstimate) -> DeepSpeedRow:
    return DeepSpeedRow(
        zero_stage=row.zero_stage,
        options=row.options,
        offload_optimizer=row.offload_optimizer,
        offload_param=row.offload_param,
        zero_init=row.zero_init,
        cpu_bytes_per_node=row.cpu_bytes_per_node,
        gpu_bytes_per_gpu=row.gpu_bytes_per_gpu,
        printed=row.printed,
    )


def memory_result(query: MemoryQuery) -> MemoryResult:
    """The API's answer: every ZeRO stage's model states per GPU and the largest model that
    fits (app.calc.memory), beside DeepSpeed's own estimates (app.calc.deepspeed_estimate)."""
    recipe = precision_recipe(query.recipe, query.optimizer)
    stages = model_states_all_stages(query.params, query.dp_degree, recipe)
    device, reserve = query.device_gb * 1e9, query.reserve_gb * 1e9
    gpus, nodes = query.gpus_in_a_node, query.nodes
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
        device_bytes=device,
        reserve_bytes=reserve,
        largest_model=[
            LargestModelOut(
                zero_stage=m.zero_stage,
                bytes_per_param_per_gpu=m.bytes_per_param_per_gpu,
                params=m.params,
            )
            for m in largest_model_all_stages(device, query.dp_degree, recipe, reserve)
        ],
        deepspeed=DeepSpeedOut(
            gpus_per_node=gpus,
            nodes=nodes,
            largest_layer_params=query.largest_layer_params,
            buffer_factor=ADDITIONAL_BUFFER_FACTOR,
            zero2=[_deepspeed_row(r) for r in zero2_all_cold(query.params, gpus, nodes)],
            zero3=[
                _deepspeed_row(r)
                for r in zero3_all_cold(query.params, query.largest_layer_params, gpus, nodes)
            ],
            source_zero2=ZERO2_SOURCE,
            source_zero3=ZERO3_SOURCE,
        ),
    )


@router.get("/memory", response_model=MemoryResult)
async def memory(query: Annotated[MemoryQuery, Query()]) -> Response:
    """Model-states memory per GPU for ZeRO stages 0-3 (default: mixed-precision Adam).

    Bytes of weights, gradients and optimizer states each GPU holds, sharded over the
    data-parallel degree as in the ZeRO paper (arXiv:1910.02054, Section 5.1, Figure 1), for
    app.calc.precision's `recipe` and `optimizer`. Model states only: no activations, buffers
    or fragmentation. `largest_model`: the inverse, the most parameters whose model states fit
    `device_gb` less `reserve_gb`. `deepspeed`: DeepSpeed's own estimators
    (estimate_zero2/zero3_model_states_mem_needs_all_cold, deepspeed/runtime/zero/
    stage_1_and_2.py:3081 and stage3.py:3744 at edaa7221) on N_d / gpus_per_node nodes: GPU
    bytes per GPU and host bytes per node with and without CPU offload and zero.Init; they
    count 18 B per parameter on the GPU, the largest layer gathered, and a 1.5 buffer factor
    on host memory.
    """
    return await kept_answer("memory", query, MemoryResult, lambda: memory_result(query))


@router.get("/training-memory", response_model=TrainingMemoryResult)
async def training(query: Annotated[TrainingQuery, Query()]) -> Response:
    """Training memory on the most loaded GPU, every term separate, with formulas and sources.

    Model fields left out come from `preset`. Parallel degrees: dp x tp x pp x cp GPUs; ZeRO
    shards over dp. Activations after Korthikanti et al. (arXiv:2205.05198).
    """
    return await kept_answer(
        "training-memory", query, TrainingMemoryResult, lambda: training_result(query)
    )


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
