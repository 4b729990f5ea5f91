"""DeepSpeed's own ZeRO memory estimators, formula for formula, to set beside app.calc.memory.

DeepSpeed answers "how much GPU and host (CPU) memory do the model states need?" with
`estimate_zero2_model_states_mem_needs` (deepspeed/runtime/zero/stage_1_and_2.py:3081-3098) and
`estimate_zero3_model_states_mem_needs` (deepspeed/runtime/zero/stage3.py:3744-3780), which
its `..._all_live` (from an nn.Module) and `..._all_cold` (from the counts) functions print for
every offload option (deepspeedai/DeepSpeed@edaa7221; docs/code-docs/source/memory.rst). With
P parameters, n GPUs per node, N GPUs in all, L the largest layer's parameters (the most any
one module holds itself, ZeRO-3's gathered working set) and f = 1.5 (additional_buffer_factor):

ZeRO-2 (stage_1_and_2.py:3089-3096)
    offload_optimizer=cpu    GPU 2P                 CPU P * max(4N, 16) * f
    offload_optimizer=none   GPU 2P + int(18P / N)  CPU P * 4n * f

ZeRO-3 (stage3.py:3753-3778), largest_layer_memory = 4L (16-bit weights and gradients of
one layer, gathered), per node share 1/nodes:
    offload_param=cpu,  offload_optimizer=cpu   GPU 4L
        CPU zero_init=1: P * 18 / nodes * f;   zero_init=0: P * max(4n, 18 / nodes) * f
    offload_param=none, offload_optimizer=cpu   GPU 4L + int(2P / N)
        CPU zero_init=1: P * 16 / nodes * f;   zero_init=0: P * max(4n, 16 / nodes) * f
    offload_param=none, offload_optimizer=none  GPU 4L + int(18P / N)
        CPU zero_init=1: L * 4n * f;           zero_init=0: P * 4n * f

CPU is per node. zero_init (deepspeed.zero.Init) builds each layer already partitioned; without
it every one of the n processes on a node first builds the whole model in fp32 on the host,
4 bytes per parameter each: the 4n. The printed tables divide bytes by 2**30 and label them
"GB" (GiB).

Where DeepSpeed and the ZeRO paper's accounting (app.calc.memory) differ:
- 18 bytes per parameter, not 16, on the GPU without offload: 2 B 16-bit gradients + 4 B fp32
  gradients + 4 B fp32 master + 8 B Adam (the comment at stage_1_and_2.py:3093-3094; since
  PR #5099, commit f4cb866c, 2024-06-04, before which ZeRO-2 was 4P + 16P / N);
- ZeRO-2 keeps the 2 B 16-bit weights whole and shards the 18 (2P + 18P/N), where the
  paper shards 2 + K = 14 (2P + 14P/N); ZeRO-3 adds the gathered largest layer 4L to the
  sharded 18P/N, where the paper has 16P/N and nothing for the gather;
- the 1.5 buffer factor multiplies the host-memory figures only;
- activations, temporary buffers and fragmentation are in neither.
"""

from __future__ import annotations

from dataclasses import dataclass

DEEPSPEED_COMMIT = "edaa7221"
ZERO2_SOURCE = (
    f"deepspeedai/DeepSpeed@{DEEPSPEED_COMMIT} deepspeed/runtime/zero/stage_1_and_2.py:3081 "
    "estimate_zero2_model_states_mem_needs"
)
ZERO3_SOURCE = (
    f"deepspeedai/DeepSpeed@{DEEPSPEED_COMMIT} deepspeed/runtime/zero/stage3.py:3744 "
    "estimate_zero3_model_states_mem_needs"
)
ADDITIONAL_BUFFER_FACTOR = 1.5  # DeepSpeed's default additional_buffer_factor


@dataclass(frozen=True)
class DeepSpeedEstimate:
    """One row of DeepSpeed's printed table: bytes of host memory per node and GPU memory per
    GPU for one choice of offload and zero.Init."""

    zero_stage: int
    offload_optimizer: bool
    offload_param: bool
    zero_init: bool | None  # ZeRO-3 only
    cpu_bytes_per_node: int
    gpu_bytes_per_gpu: int

    @property
    def options(self) -> str:
        """The Options column as DeepSpeed prints it (stage3.py:3851, stage_1_and_2.py:3159)."""
        optimizer = "offload_optimizer=" + ("cpu " if self.offload_optimizer else "none")
        if self.zero_stage == 2:
            return optimizer
        param = "offload_param=" + ("cpu " if self.offload_param else "none")
        return f"{param}, {optimizer}, zero_init={1 if self.zero_init else 0}"

    @property
    def printed(self) -> str:
        """The line DeepSpeed prints: bytes / 2**30 with two decimals, labelled GB."""
        return (
            f" {self.cpu_bytes_per_node / 2**30:7.2f}GB | "
            f"{self.gpu_bytes_per_gpu / 2**30:6.2f}GB | {self.options}"
        )


def _check(total_params: float, gpus_per_node: int, nodes: int) -> None:
    if not total_params > 0:
        raise ValueError("total_params must be positive")
    if gpus_per_node < 1 or nodes < 1:
        raise ValueError("gpus_per_node and nodes must be at least 1")


def zero2_model_states_mem_needs(
    total_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    offload_optimizer: bool = True,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
) -> tuple[int, int]:
    """(CPU bytes per node, GPU bytes per GPU): stage_1_and_2.py:3081-3098, as written there."""
    _check(total_params, gpus_per_node, nodes)
    total_gpus = nodes * gpus_per_node
    if offload_optimizer:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * buffer_factor
    else:
        gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
        cpu_mem = total_params * 4 * gpus_per_node * buffer_factor
    return int(cpu_mem), int(gpu_mem)


def zero3_model_states_mem_needs(
    total_params: float,
    largest_layer_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    offload_optimizer: bool = True,
    offload_param: bool = True,
    zero_init: bool = True,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
) -> tuple[int, int, float]:
    """(CPU bytes per node, GPU bytes per GPU, largest_layer_memory): stage3.py:3744-3780.

    offload_param without offload_optimizer is not a case DeepSpeed estimates (its table
    skips it); it is refused here."""
    _check(total_params, gpus_per_node, nodes)
    if largest_layer_params < 0 or largest_layer_params > total_params:
        raise ValueError("largest_layer_params must be between 0 and total_params")
    if offload_param and not offload_optimizer:
        raise ValueError("DeepSpeed's estimator has no case for offload_param without "
                         "offload_optimizer")  # fmt: skip
    total_gpus = nodes * gpus_per_node
    gpus_factor = 1 / nodes
    largest_layer_memory = 4 * largest_layer_params
    if offload_optimizer:
        if offload_param:
            gpu_mem = largest_layer_memory
            per_param = 18 * gpus_factor if zero_init else max(4 * gpus_per_node, 18 * gpus_factor)
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            per_param = 16 * gpus_factor if zero_init else max(4 * gpus_per_node, 16 * gpus_factor)
        cpu_mem = total_params * per_param * buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        loaded = largest_layer_params if zero_init else total_params
        cpu_mem = loaded * 4 * gpus_per_node * buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def zero2_all_cold(
    total_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
) -> list[DeepSpeedEstimate]:
    """The rows `estimate_zero2_model_states_mem_needs_all_cold` prints, in its order
    (stage_1_and_2.py:3137-3179): optimizer offloaded to the CPU, then not."""
    rows = []
    for offload in (True, False):
        cpu, gpu = zero2_model_states_mem_needs(
            total_params, gpus_per_node, nodes, offload, buffer_factor
        )
        rows.append(DeepSpeedEstimate(2, offload, False, None, cpu, gpu))
    return rows


def zero3_all_cold(
    total_params: float,
    largest_layer_params: float,
    gpus_per_node: int = 1,
    nodes: int = 1,
    buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
) -> list[DeepSpeedEstimate]:
    """The six rows `estimate_zero3_model_states_mem_needs_all_cold` prints, in its order
    (stage3.py:3827-3887)."""
    rows = []
    for offload_optimizer in (True, False):
        for offload_param in (True, False):
            if offload_param and not offload_optimizer:
                continue
            for zero_init in (True, False):
                cpu, gpu, _ = zero3_model_states_mem_needs(
                    total_params, largest_layer_params, gpus_per_node, nodes,
                    offload_optimizer, offload_param, zero_init, buffer_factor,
                )  # fmt: skip
                rows.append(
                    DeepSpeedEstimate(3, offload_optimizer, offload_param, zero_init, cpu, gpu)
                )
    return rows
