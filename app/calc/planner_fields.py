"""The planner form's vocabulary: its GPU types, the published runs it offers as presets, which
fields make a layout and which a published run fixes, and every field's label."""

from __future__ import annotations

from dataclasses import dataclass

from app.calc.hardware import ACCELERATORS
from app.calc.planner.published import RUNS
from app.calc.training_query import LABELS as TRAINING_LABELS
from app.calc.training_query import MODEL_FIELDS


@dataclass(frozen=True)
class GpuType:
    """A GPU as the planner needs it: its FLOPs, its memory and the link inside its node."""

    accelerator: str  # app.calc.hardware.ACCELERATORS
    memory: str  # app.calc.gpus.GPUS
    intra_node: str  # app.calc.links.LINKS, the usual link between GPUs of one node

    @property
    def name(self) -> str:
        return ACCELERATORS[self.accelerator].name


GPU_TYPES: dict[str, GpuType] = {
    "h100-sxm": GpuType("h100-sxm", "h100-80gb", "nvlink4"),
    "h200": GpuType("h200", "h200", "nvlink4"),
    "a100-80gb-sxm": GpuType("a100-80gb-sxm", "a100-80gb", "nvlink3"),
    "h100-pcie": GpuType("h100-pcie", "h100-80gb", "pcie5"),
}

# Presets of published runs (app.calc.planner.published): a label, where it comes from, and
# the page's inputs. `run` takes the model, cluster, batch and layout from the run itself:
# some runs' models and clusters (Jean Zay's Omni-Path, the H800) are no preset of the form.
RUN_PRESETS: dict[str, tuple[str, str, dict[str, object]]] = {
    slug: (run.title, run.source, {"run": slug}) for slug, run in RUNS.items()
}

LAYOUT_FIELDS = (
    "dp", "tp", "pp", "cp", "ep", "zero_stage", "distributed_optimizer", "recompute",
    "micro_batch", "schedule", "virtual_stages",
)  # fmt: skip

# What a published run fixes: its model, its cluster and its batch. A query naming a run
# leaves these out.
RUN_FIELDS = (
    "preset", *MODEL_FIELDS, "gpu", "gpus_per_node", "nodes", "intra_node", "inter_node",
    "global_batch_tokens", "seq_len", "token_budget", "flash_attention", "uneven_pipeline",
)  # fmt: skip

LABELS = {
    **TRAINING_LABELS,
    "run": "Published run",
    "preset": "Model",
    "gpu": "GPU type",
    "gpus_per_node": "GPUs per node",
    "nodes": "Nodes",
    "intra_node": "Link inside a node",
    "inter_node": "Link between nodes",
    "global_batch_tokens": "Global batch (tokens)",
    "seq_len": "Sequence length",
    "token_budget": "Token budget",
    "flash_attention": "FlashAttention",
    "uneven_pipeline": "Uneven pipeline stages",
    "matmul_efficiency": "Matmul efficiency",
    "profile": "Performance profile",
    "top": "Layouts listed",
    "dp": "Layout DP",
    "tp": "Layout TP",
    "pp": "Layout PP",
    "cp": "Layout CP",
    "ep": "Layout EP",
    "zero_stage": "Layout ZeRO stage",
    "distributed_optimizer": "Layout distributed optimizer",
    "recompute": "Layout recompute",
    "micro_batch": "Layout micro-batch",
    "schedule": "Layout schedule",
    "virtual_stages": "Layout virtual stages",
}
