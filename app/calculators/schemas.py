"""Inputs and outputs of the calculators' JSON API and forms, with their bounds."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from app.calc.memory import ZERO_STAGES

# 100 trillion parameters and a million-way data parallelism: far past any real run, and
# still small enough that nothing overflows or renders as nonsense.
MAX_PARAMS = 1e14
MAX_DP_DEGREE = 2**20

Params = Annotated[
    float,
    Field(gt=0, le=MAX_PARAMS, description="Number of model parameters (Psi), e.g. 7.5e9."),
]
DpDegree = Annotated[
    int,
    Field(
        ge=1, le=MAX_DP_DEGREE, description="Data-parallel degree N_d: the ranks ZeRO shards over."
    ),
]


class MemoryQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    params: Params
    dp_degree: DpDegree


class MemoryForm(BaseModel):
    """The page's form: parameters typed in billions, as people say them."""

    model_config = ConfigDict(extra="ignore")

    params_b: Annotated[
        float, Field(gt=0, le=MAX_PARAMS / 1e9, description="Parameters, in billions.")
    ] = 7.5
    dp_degree: DpDegree = 64

    def to_query(self) -> MemoryQuery:
        return MemoryQuery(params=self.params_b * 1e9, dp_degree=self.dp_degree)


class StageMemory(BaseModel):
    zero_stage: Annotated[int, Field(description=f"ZeRO stage, one of {ZERO_STAGES}.")]
    name: str
    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    total_bytes: float


class MemoryResult(BaseModel):
    params: float
    dp_degree: int
    recipe: str
    bytes_per_param: dict[str, float]
    stages: list[StageMemory]
