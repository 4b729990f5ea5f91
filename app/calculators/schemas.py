"""Inputs and outputs of the calculators' JSON API and forms, with their bounds."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.calc.memory import ZERO_STAGES
from app.calc.messages import N_, Message
from app.calc.precision import OPTIMIZERS, RECIPES

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


RecipeName = Literal[tuple(RECIPES)]  # type: ignore[valid-type]
OptimizerName = Literal[tuple(OPTIMIZERS)]  # type: ignore[valid-type]
DeviceGb = Annotated[
    float, Field(gt=0, le=1e6, description="Memory of one device in GB (10^9 B), e.g. 80.")
]
ReserveGb = Annotated[
    float,
    Field(ge=0, le=1e6, description="GB kept back for activations and buffers (default 0)."),
]
GpusPerNode = Annotated[
    int, Field(ge=1, le=1024, description="GPUs per node; N_d / this = nodes (DeepSpeed).")
]
LargestLayer = Annotated[
    float,
    Field(ge=0, le=MAX_PARAMS, description="Parameters of the largest layer (ZeRO-3's gather)."),
]


def _check_memory_inputs(
    params: float,
    dp_degree: int,
    gpus_per_node: int,
    device_gb: float,
    reserve_gb: float,
    largest_layer_params: float,
) -> None:
    """What the fields' bounds cannot say alone, as one message each."""
    if dp_degree % gpus_per_node and gpus_per_node % dp_degree:
        template = N_(
            "GPUs per node (%(gpus)s) must divide the data-parallel degree (%(dp)s), or the "
            "degree fit in one node"
        )
        raise ValueError(Message(template, gpus=gpus_per_node, dp=dp_degree))
    if reserve_gb >= device_gb:
        raise ValueError(Message(N_("The reserve must be smaller than the device's memory")))
    if largest_layer_params > params:
        raise ValueError(
            Message(N_("The largest layer cannot hold more parameters than the model"))
        )


class MemoryQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    params: Params
    dp_degree: DpDegree
    recipe: RecipeName = Field("mixed_bf16", description="app.calc.precision's recipe.")
    optimizer: OptimizerName = "adam"
    device_gb: DeviceGb = 80.0
    reserve_gb: ReserveGb = 0.0
    gpus_per_node: GpusPerNode = 8
    largest_layer_params: LargestLayer = 131_072_000

    @model_validator(mode="after")
    def _consistent(self) -> MemoryQuery:
        _check_memory_inputs(self.params, self.dp_degree, self.gpus_per_node, self.device_gb,
                             self.reserve_gb, self.largest_layer_params)  # fmt: skip
        return self

    @property
    def nodes(self) -> int:
        """DeepSpeed's num_nodes: the data-parallel ranks spread over whole nodes."""
        return max(1, self.dp_degree // self.gpus_per_node)

    @property
    def gpus_in_a_node(self) -> int:
        """DeepSpeed's num_gpus_per_node: fewer than a node's when N_d is smaller."""
        return min(self.gpus_per_node, self.dp_degree)


class MemoryForm(BaseModel):
    """The page's form: parameters typed in billions, as people say them."""

    model_config = ConfigDict(extra="ignore")

    params_b: Annotated[
        float, Field(gt=0, le=MAX_PARAMS / 1e9, description="Parameters, in billions.")
    ] = 7.5
    dp_degree: DpDegree = 64
    recipe: RecipeName = "mixed_bf16"
    optimizer: OptimizerName = "adam"
    device_gb: DeviceGb = 80.0
    reserve_gb: ReserveGb = 0.0
    gpus_per_node: GpusPerNode = 8
    largest_layer_m: Annotated[
        float, Field(ge=0, le=MAX_PARAMS / 1e6, description="Largest layer, in millions.")
    ] = 131.072

    @model_validator(mode="after")
    def _consistent(self) -> MemoryForm:
        _check_memory_inputs(
            self.params_b * 1e9,
            self.dp_degree,
            self.gpus_per_node,
            self.device_gb,
            self.reserve_gb,
            self.largest_layer_m * 1e6,
        )
        return self

    def to_query(self) -> MemoryQuery:
        return MemoryQuery(
            params=self.params_b * 1e9,
            dp_degree=self.dp_degree,
            recipe=self.recipe,
            optimizer=self.optimizer,
            device_gb=self.device_gb,
            reserve_gb=self.reserve_gb,
            gpus_per_node=self.gpus_per_node,
            largest_layer_params=self.largest_layer_m * 1e6,
        )


class StageMemory(BaseModel):
    zero_stage: Annotated[int, Field(description=f"ZeRO stage, one of {ZERO_STAGES}.")]
    name: str
    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    total_bytes: float


class LargestModelOut(BaseModel):
    zero_stage: int
    bytes_per_param_per_gpu: float = Field(description="w / N_w + g / N_g + K / N_os.")
    params: float = Field(description="(device - reserve) / bytes_per_param_per_gpu.")


class DeepSpeedRow(BaseModel):
    zero_stage: int
    options: str = Field(description="DeepSpeed's Options column.")
    offload_optimizer: bool
    offload_param: bool
    zero_init: bool | None
    cpu_bytes_per_node: int
    gpu_bytes_per_gpu: int
    printed: str = Field(description="The line DeepSpeed prints (bytes / 2^30, labelled GB).")


class DeepSpeedOut(BaseModel):
    gpus_per_node: int
    nodes: int
    largest_layer_params: float
    buffer_factor: float
    zero2: list[DeepSpeedRow]
    zero3: list[DeepSpeedRow]
    source_zero2: str
    source_zero3: str


class MemoryResult(BaseModel):
    params: float
    dp_degree: int
    recipe: str
    bytes_per_param: dict[str, float]
    stages: list[StageMemory]
    device_bytes: float
    reserve_bytes: float
    largest_model: list[LargestModelOut] = Field(
        description="The largest model whose model states fit the device, per ZeRO stage."
    )
    deepspeed: DeepSpeedOut = Field(
        description="DeepSpeed's estimate_zero2/zero3_model_states_mem_needs_all_cold."
    )


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
