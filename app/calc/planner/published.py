"""Published training runs as data: each run's model, cluster, request and layout as its paper
gives them, the figure it reports, and the band the planner's prediction is held to (with the
reason for the gap, in words). tests/calc/test_planner_published.py pins every band; the
planner page offers every run as a preset (/calculators/planner?run=<slug>).

The planner costs every run with a performance profile fitted to published runs
(app.calc.performance, app/calc/profiles/): Megatron-LM 1T and Llama 3 with the default one,
fitted to Megatron-style runs among which they are; BLOOM with the one fitted to ZeRO-style
runs (DeepSpeed, FSDP). So each dense run is expected within 10% of its published figure; the
gap says what is left. DeepSeek-V3 (MoE, FP8, DualPipe) is fitted to nothing, and its gap says
which published techniques the model leaves out.

Two pieces of hardware live here, not in app.calc.links / app.calc.hardware, because they are
facts about one run's machines rather than general presets: Jean Zay's Omni-Path is 4 NICs
shared by 8 GPUs (a per-GPU share of that cluster, not a link's speed), and the H800 is taken
from the DeepSeek-V3 report as an H100 with slower NVLink, with no datasheet of its own here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from app.calc.hardware import ACCELERATORS
from app.calc.links import LINKS, Link
from app.calc.messages import N_, Message
from app.calc.model import PRESETS, ModelConfig
from app.calc.planner.costs import evaluate
from app.calc.planner.request import (
    Cluster,
    Layout,
    PlanRequest,
    cluster,
    plan_request,
)
from app.calc.planner.results import LayoutCost
from app.calc.profiles import built_in

Metric = Literal["TFLOP/s per GPU", "MFU", "tokens/s per GPU"]


@dataclass(frozen=True)
class PublishedRun:
    slug: str
    title: str
    source: str  # paper, table or section
    model: ModelConfig
    cluster: Cluster
    gpu_memory: str  # app.calc.gpus.GPUS slug of the cluster's memory
    global_batch_tokens: int
    seq_len: int
    token_budget: float
    layout: Layout  # as published, complete
    metric: Metric
    published: float  # the figure, in the metric's raw unit (FLOP/s, fraction, tokens/s)
    band: tuple[float, float]  # planner / published must lie in it
    # Why the planner differs from the published figure, in words: the page shows the two
    # figures and their ratio just before it, so it repeats none of them.
    gap: Message
    options: dict[str, Any] = field(default_factory=dict)  # PlanRequest options

    @property
    def preset(self) -> str | None:
        """The model.PRESETS name when the model is a preset, else None (a custom shape)."""
        return next((name for name, cfg in PRESETS.items() if cfg == self.model), None)


@dataclass(frozen=True)
class RunCost:
    cost: LayoutCost  # the planner's cost of the published layout
    predicted: float  # in the metric's unit
    ratio: float  # predicted / published


def request_for(run: PublishedRun, **overrides: Any) -> PlanRequest:
    """The planner's request for the run (overrides: PlanRequest options, e.g. top)."""
    return plan_request(run.model, run.cluster, run.global_batch_tokens, run.seq_len,
                        run.token_budget, **{**run.options, **overrides})  # fmt: skip


def predicted(run: PublishedRun, cost: LayoutCost) -> float:
    """The planner's figure for `cost` in the run's metric."""
    if run.metric == "TFLOP/s per GPU":
        return cost.hardware_flops_per_gpu_s  # with the recompute: how Megatron-LM counts
    if run.metric == "MFU":
        return cost.mfu
    return cost.tokens_per_s / run.cluster.gpus


def evaluate_run(run: PublishedRun, request: PlanRequest | None = None) -> RunCost | str:
    """The published layout costed by the planner and its ratio to the published figure, or
    the rule it breaks under `request` (default: the run's own)."""
    cost = evaluate(request or request_for(run), run.layout)
    if not isinstance(cost, LayoutCost):
        return cost.rule
    value = predicted(run, cost)
    return RunCost(cost, value, value / run.published)


def strict_rule(run: PublishedRun) -> str | None:
    """The rule the published layout breaks when stages must be equal (Megatron-LM's rule),
    or None."""
    result = evaluate_run(run, request_for(run, uneven_pipeline=False))
    return result if isinstance(result, str) else None


_GPT_1T = ModelConfig(
    layers=128, hidden=25600, heads=160, kv_heads=160, ffn_hidden=4 * 25600, vocab=51200,
    ffn_type="gelu", norm="layernorm", tied_embeddings=True, attention_bias=True,
    mlp_bias=True, learned_positions=2048, name="GPT 1T",
)  # fmt: skip
_BLOOM = ModelConfig(
    layers=70, hidden=14336, heads=112, kv_heads=112, ffn_hidden=4 * 14336, vocab=250880,
    ffn_type="gelu", norm="layernorm", tied_embeddings=True, attention_bias=True,
    mlp_bias=True, name="BLOOM",
)  # fmt: skip
# The planner cannot express MLA or the 3 dense layers: MHA of 128 x 128 and every layer
# MoE (721B parameters, not 671B).
_DEEPSEEK_V3 = ModelConfig(
    layers=61, hidden=7168, heads=128, kv_heads=128, head_dim=128, ffn_hidden=2048,
    vocab=129280, experts=256, top_k=8, shared_experts=1, name="DeepSeek-V3 (approx.)",
)  # fmt: skip

# Jean Zay: 4 Omni-Path 100 Gb/s NICs per 8 GPUs = 6.25 GB/s per GPU.
OMNI_PATH_JEAN_ZAY = Link("opa", "4 x Omni-Path 100 Gb/s per node", 4 * 12.5e9 / 8, 14e-6,
                          "inter-node", "Jean Zay: 4 x 100 Gb/s per 8 GPUs")  # fmt: skip
# H800 = H100 compute with NVLink 400 GB/s (200 each way): DeepSeek's hardware paper,
# arXiv:2505.09343 ('reduced from 900 GB/s to 400 GB/s'); the V3 report, arXiv:2412.19437,
# gives only the achieved 160 GB/s.
H800 = replace(ACCELERATORS["h100-sxm"], slug="h800", name="NVIDIA H800")
NVLINK_H800 = replace(LINKS["nvlink4"], slug="nvlink-h800", name="NVLink (H800)",
                      bandwidth_bytes_per_s=200e9)  # fmt: skip


# What each run's framework offered the planner's search, so that its best layout is one the
# authors could have run: Megatron-LM in 2021 had no sequence or context parallelism, no
# selective recompute (arXiv:2205.05198 came in 2022) and no distributed optimizer; the
# Megatron-DeepSpeed of BLOOM (2022) added ZeRO-1 and had no interleaved schedule; Llama 3's
# own (2024) had everything but a zero-bubble schedule.
MEGATRON_2021: dict[str, Any] = {
    "sequence_parallel": False, "context_parallel": False, "zero_options": ((0, False),),
    "recompute_modes": ("none", "full"), "schedules": ("1f1b", "interleaved"),
}  # fmt: skip
MEGATRON_DEEPSPEED_2022: dict[str, Any] = {
    "sequence_parallel": False, "context_parallel": False,
    "zero_options": ((0, False), (1, False)), "recompute_modes": ("none", "full"),
    "schedules": ("1f1b",),
}  # fmt: skip

RUNS: dict[str, PublishedRun] = {
    run.slug: run
    for run in (
        PublishedRun(
            slug="megatron-1t",
            title="Megatron-LM GPT 1T, 3,072 A100s",
            source=(
                "Narayanan et al. 2021, arXiv:2104.04473, Table 1, last row (t=8, p=64, "
                "dp=6, batch 3072, seq 2048; 163 TFLOP/s per GPU = 52% of peak, counted "
                "with eq. (3), full recompute) and Section 5.1 (84 days for 450B tokens); "
                "Selene: DGX A100 nodes, NVLink 3, 8 HDR InfiniBand NICs per node"
            ),
            model=_GPT_1T,
            cluster=cluster("a100-80gb-sxm", "a100-80gb", 8, 384, "nvlink3", "ib-hdr"),
            gpu_memory="a100-80gb",
            global_batch_tokens=3072 * 2048,
            seq_len=2048,
            token_budget=450e9,
            options={"flash_attention": False, "dropout": True, **MEGATRON_2021},
            layout=Layout(dp=6, tp=8, pp=64, recompute="full", sequence_parallel=False),
            metric="TFLOP/s per GPU",
            published=163e12,
            band=(0.9, 1.1),
            gap=Message(
                N_(
                    "the default profile is fitted to this run among the other Megatron-style "
                    "runs; what is left is the residual of that fit (bench/planner_accuracy.py "
                    "gives each run's error held out of the fit)"
                )
            ),
        ),
        PublishedRun(
            slug="bloom-176b",
            title="BLOOM 176B, 384 A100s on Jean Zay",
            source=(
                "BigScience BLOOM, arXiv:2211.05100, Section 3.4: 384 A100 80GB in 48 nodes, "
                "TP=4, PP=12, DP=8, ZeRO-1, micro-batch 2, global batch 2048 x 2048 tokens, "
                "activation checkpointing; Jean Zay: 4 Omni-Path 100 Gb/s NICs per 8 GPUs. "
                "~150 TFLOP/s per GPU: the bigscience/bloom model card ('about 150 TFLOPs per "
                "GPU'); the paper gives 156 TFLOPs for its fastest configuration"
            ),
            model=_BLOOM,
            cluster=replace(
                cluster("a100-80gb-sxm", "a100-80gb", 8, 48, "nvlink3"),
                inter_node=OMNI_PATH_JEAN_ZAY,
            ),  # fmt: skip
            gpu_memory="a100-80gb",
            global_batch_tokens=2048 * 2048,
            seq_len=2048,
            token_budget=366e9,
            # 70 layers do not split into 12 equal stages: Megatron-LM's rule rejects the
            # layout; Megatron-DeepSpeed's pipeline splits unevenly. Its data parallelism is
            # DeepSpeed's ZeRO-1: the profile fitted to ZeRO-style runs, and in bf16 DeepSpeed's
            # BF16_Optimizer, which keeps a whole fp32 copy of the gradients. Its launch script
            # (bigscience tr11-176B-ml.slurm) passes --abort-on-unmet-fused-kernel-constraints:
            # only layouts whose fused softmax kernel runs.
            options={
                "flash_attention": False,
                "fused_softmax_required": True,
                "uneven_pipeline": True,
                "recipe": "deepspeed_bf16",
                "profile": built_in()["zero-a100"],
                **MEGATRON_DEEPSPEED_2022,
            },  # fmt: skip
            layout=Layout(
                dp=8,
                tp=4,
                pp=12,
                zero_stage=1,
                recompute="full",
                micro_batch=2,
                sequence_parallel=False,
            ),  # fmt: skip
            metric="TFLOP/s per GPU",
            published=150e12,
            band=(0.9, 1.1),
            gap=Message(
                N_(
                    "costed with the profile fitted to ZeRO-style runs (MT-NLG, BLOOM, OPT), "
                    "whose DeepSpeed engine is slower per step than Megatron-LM's; the rest is "
                    "that fit's residual"
                )
            ),
        ),
        PublishedRun(
            slug="llama3-405b",
            title="Llama 3 405B, 16,384 H100s",
            source=(
                "Grattafiori et al. 2024, arXiv:2407.21783, Table 4: 16,384 H100s, TP 8, "
                "CP 1, PP 16, DP 128, seq 8192, 16M tokens per batch, 400 TFLOP/s per GPU, "
                "41% BF16 MFU; Section 3.3.2 (uneven stages; 'Our use of FSDP for Llama 3 "
                "shards optimizer states and gradients, but for model shards we do not reshard "
                "after forward computation': ZeRO-2); RoCE 400 Gb/s per GPU"
            ),
            model=PRESETS["llama3-405b"],
            cluster=cluster(nodes=2048, inter_node="roce-400g"),
            gpu_memory="h100-80gb",
            global_batch_tokens=16 * 1024 * 1024,
            seq_len=8192,
            token_budget=15.6e12,
            # 126 layers on 16 stages is uneven (Section 3.3.2 moves a layer off the first
            # and last stages).
            options={"uneven_pipeline": True, "schedules": ("1f1b", "interleaved")},
            # FSDP as Section 3.3.2 describes it is ZeRO-2 with a pipeline: sharded gradients,
            # so the planner reduce-scatters them every micro-batch (how often Llama 3 does is
            # not published). v is not published either: app.calc.published_runs.LLAMA3_V.
            layout=Layout(
                dp=128,
                tp=8,
                pp=16,
                zero_stage=2,
                schedule="interleaved",
                virtual_stages=7,
            ),  # fmt: skip
            metric="MFU",
            published=0.41,
            band=(0.9, 1.1),
            gap=Message(
                N_(
                    "v and the micro-batch are not published (v = 7 is what the paper's own "
                    "account of its MFU drop implies); the planner reduce-scatters the gradients "
                    "every micro-batch, as ZeRO-2 does, where Meta's FSDP may do it once"
                )
            ),
        ),
        PublishedRun(
            slug="deepseek-v3",
            title="DeepSeek-V3, 2,048 H800s",
            source=(
                "DeepSeek-AI 2024, arXiv:2412.19437, Section 3.2 (2048 H800s, PP 16, EP 64 "
                "over 8 nodes, ZeRO-1 DP, no TP, DualPipe; IB 50 GB/s per GPU), "
                "Section 1 (180K H800 GPU-hours per trillion tokens = 1e12 / (180e3 * 3600) "
                "= 1543 tokens/s per GPU) and Section 4.2 (shape; seq 4096, batch 15360); "
                "eight 400G InfiniBand CX7 NICs per node and NVLink 400 GB/s: arXiv:2505.09343"
            ),
            model=_DEEPSEEK_V3,
            cluster=Cluster(
                H800, cluster().gpu_memory_bytes, 8, 256, NVLINK_H800, LINKS["ib-ndr"]
            ),  # fmt: skip
            gpu_memory="h100-80gb",
            global_batch_tokens=15360 * 4096,
            seq_len=4096,
            token_budget=14.8e12,
            options={"uneven_pipeline": True},
            # Without recompute 1F1B keeps 16 micro-batches of bf16 MoE activations (top-8
            # copies) on the first stage, 130 GB; DeepSeek recomputes RMSNorm and the MLA
            # up-projections, caches FP8 activations and uses DualPipe.
            layout=Layout(dp=128, pp=16, ep=64, zero_stage=1, recompute="full"),
            metric="tokens/s per GPU",
            published=1543,
            band=(0.3, 0.7),
            gap=Message(
                N_(
                    "the planner exposes the expert all-to-all, over %(share)s of its step, "
                    "where DualPipe hides it, and runs BF16 matmuls where DeepSeek runs FP8 "
                    "ones at twice the peak"
                ),
                share="40%",  # tests/calc/test_planner_published.py holds the share to it
            ),
        ),
    )
}
