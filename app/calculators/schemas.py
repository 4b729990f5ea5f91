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


class ModelShape(BaseModel):
    """A model's shape, field for field as app.calc.model.ModelConfig has it."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    head_dim: int | None
    ffn_type: str
    norm: str
    tied_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    attention_out_bias: bool | None
    learned_positions: int
    experts: int
    top_k: int
    shared_experts: int
    name: str


class ModelFromConfig(BaseModel):
    model: ModelShape
    total_params: int
    active_params: int


class TermOut(BaseModel):
    key: str
    label: str
    gpu_bytes: float
    cpu_bytes: float
    formula: str = Field(description="LaTeX, symbolic.")
    substituted: str = Field(description="LaTeX, with this request's numbers.")
    source: str


class TrainingMemoryResult(BaseModel):
    model: ModelShape
    total_params: int
    active_params: int
    gpu_bytes: float = Field(description="Bytes on the most loaded GPU (the first pipeline stage).")
    cpu_bytes: float = Field(description="Bytes of host memory per GPU (offloaded states).")
    terms: list[TermOut]
    gpu: str
    gpu_memory_bytes: float
    fits: bool
    headroom_bytes: float
    largest_micro_batch: int
