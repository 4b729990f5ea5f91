"""Model-states memory per GPU under ZeRO stages 0-3.

Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", SC'20 (arXiv:1910.02054), Section 5.1 and Figure 1. With Psi parameters,
mixed-precision Adam keeps 2 bytes of fp16/bf16 weights, 2 bytes of gradients and
K = 12 bytes of optimizer state (fp32 master weights, momentum and variance) per
parameter. ZeRO shards these over the N_d ranks of the data-parallel group:

    stage 0 (plain DDP)     (2 + 2 + K) * Psi
    stage 1 (P_os)          2 * Psi + 2 * Psi + K * Psi / N_d
    stage 2 (P_os+g)        2 * Psi + (2 + K) * Psi / N_d
    stage 3 (P_os+g+p)      (2 + 2 + K) * Psi / N_d

Model states only: activations, temporary buffers and fragmentation are separate terms.

The inverse question, the largest model whose model states fit a device of M bytes with R
bytes set aside for activations and buffers, follows because the per-GPU bytes are linear in
Psi: with w, g and K bytes per parameter sharded w ways, g ways and K ways as above,
M(Psi) = Psi * (w / N_w + g / N_g + K / N_os), so Psi_max = (M - R) / (w / N_w + g / N_g +
K / N_os). ZeRO-3 on N_d = 64 ranks with 16 bytes per parameter: 80 GB holds
80e9 * 64 / 16 = 320e9 parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.precision import bytes_per_param

ZERO_STAGES = (0, 1, 2, 3)

# The stages in the paper's own names, for labels.
ZERO_STAGE_NAMES = {
    0: "DDP (no sharding)",
    1: "ZeRO-1 (P_os)",
    2: "ZeRO-2 (P_os+g)",
    3: "ZeRO-3 (P_os+g+p)",
}


@dataclass(frozen=True)
class PrecisionRecipe:
    """Bytes kept per parameter for each kind of model state."""

    name: str
    weight_bytes: float
    grad_bytes: float
    optimizer_bytes: float  # the paper's K: every optimizer-owned copy, fp32 master included


MIXED_PRECISION_ADAM = PrecisionRecipe(
    name="mixed-precision Adam (16-bit weights and gradients, fp32 master + m + v)",
    weight_bytes=2,
    grad_bytes=2,
    optimizer_bytes=12,
)

# Plain fp32 training with Adam: 4 B of weights, 4 B of gradients, and fp32 momentum and
# variance (K = 8, no master copy since the weights are already fp32): 16 B per parameter,
# the ZeRO paper's Section 3.1 accounting with fp32 in place of fp16 (app.calc.precision's
# "fp32" recipe and "adam" optimizer).
FP32_ADAM = PrecisionRecipe(
    name="fp32 Adam (fp32 weights and gradients, fp32 m + v)",
    weight_bytes=4,
    grad_bytes=4,
    optimizer_bytes=8,
)


def precision_recipe(recipe: str = "mixed_bf16", optimizer: str = "adam") -> PrecisionRecipe:
    """app.calc.precision's recipe and optimizer as the three ZeRO terms: 16-bit (or other)
    weights, gradients, and K = master copy + optimizer state, which ZeRO-1 shards."""
    b = bytes_per_param(recipe, optimizer)
    return PrecisionRecipe(
        name=f"{recipe} + {optimizer}",
        weight_bytes=b.weights_on_gpu,
        grad_bytes=b.grads,
        optimizer_bytes=b.optimizer_states,
    )


@dataclass(frozen=True)
class ModelStates:
    """Bytes of model states one GPU holds."""

    zero_stage: int
    params: float
    dp_degree: int
    recipe: PrecisionRecipe
    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.grads_bytes + self.optimizer_bytes


def model_states_per_gpu(
    params: float,
    dp_degree: int,
    zero_stage: int,
    recipe: PrecisionRecipe = MIXED_PRECISION_ADAM,
) -> ModelStates:
    """Weights, gradients and optimizer states per GPU for one ZeRO stage.

    `dp_degree` is the data-parallel degree N_d, which ZeRO shards over; with tensor or
    pipeline parallelism it is smaller than the number of GPUs.
    """
    if not params > 0:
        raise ValueError("params must be positive")
    if dp_degree < 1:
        raise ValueError("dp_degree must be at least 1")
    if zero_stage not in ZERO_STAGES:
        raise ValueError("zero_stage must be 0, 1, 2 or 3")
    # Stage s shards the optimizer states from s >= 1, gradients from s >= 2, weights at 3.
    weights_ways, grads_ways, optimizer_ways = _shard_ways(dp_degree, zero_stage)
    return ModelStates(
        zero_stage=zero_stage,
        params=params,
        dp_degree=dp_degree,
        recipe=recipe,
        weights_bytes=recipe.weight_bytes * params / weights_ways,
        grads_bytes=recipe.grad_bytes * params / grads_ways,
        optimizer_bytes=recipe.optimizer_bytes * params / optimizer_ways,
    )


def _shard_ways(dp_degree: int, zero_stage: int) -> tuple[int, int, int]:
    """How many ways weights, gradients and optimizer states are split at one ZeRO stage."""
    return (
        dp_degree if zero_stage >= 3 else 1,
        dp_degree if zero_stage >= 2 else 1,
        dp_degree if zero_stage >= 1 else 1,
    )


@dataclass(frozen=True)
class LargestModel:
    """The largest parameter count whose model states fit one device."""

    zero_stage: int
    dp_degree: int
    recipe: PrecisionRecipe
    device_bytes: float
    reserve_bytes: float
    bytes_per_param_per_gpu: float  # w / N_w + g / N_g + K / N_os
    params: float

    @property
    def budget_bytes(self) -> float:
        return self.device_bytes - self.reserve_bytes


def largest_model(
    device_bytes: float,
    dp_degree: int,
    zero_stage: int,
    recipe: PrecisionRecipe = MIXED_PRECISION_ADAM,
    reserve_bytes: float = 0.0,
) -> LargestModel:
    """The exact inverse of model_states_per_gpu: the Psi whose model states fill
    `device_bytes - reserve_bytes` at this stage, data-parallel degree and recipe."""
    if not device_bytes > 0:
        raise ValueError("device_bytes must be positive")
    if reserve_bytes < 0:
        raise ValueError("reserve_bytes must not be negative")
    if reserve_bytes >= device_bytes:
        raise ValueError("the reserve must be smaller than the device's memory")
    if dp_degree < 1:
        raise ValueError("dp_degree must be at least 1")
    if zero_stage not in ZERO_STAGES:
        raise ValueError("zero_stage must be 0, 1, 2 or 3")
    weights_ways, grads_ways, optimizer_ways = _shard_ways(dp_degree, zero_stage)
    per_param = (
        recipe.weight_bytes / weights_ways
        + recipe.grad_bytes / grads_ways
        + recipe.optimizer_bytes / optimizer_ways
    )
    return LargestModel(
        zero_stage=zero_stage,
        dp_degree=dp_degree,
        recipe=recipe,
        device_bytes=device_bytes,
        reserve_bytes=reserve_bytes,
        bytes_per_param_per_gpu=per_param,
        params=(device_bytes - reserve_bytes) / per_param,
    )


def largest_model_all_stages(
    device_bytes: float,
    dp_degree: int,
    recipe: PrecisionRecipe = MIXED_PRECISION_ADAM,
    reserve_bytes: float = 0.0,
) -> list[LargestModel]:
    """The largest model under every ZeRO stage, 0 to 3."""
    return [
        largest_model(device_bytes, dp_degree, stage, recipe, reserve_bytes)
        for stage in ZERO_STAGES
    ]


def model_states_all_stages(
    params: float, dp_degree: int, recipe: PrecisionRecipe = MIXED_PRECISION_ADAM
) -> list[ModelStates]:
    """The same model and data-parallel degree under every ZeRO stage, 0 to 3."""
    return [model_states_per_gpu(params, dp_degree, stage, recipe) for stage in ZERO_STAGES]
