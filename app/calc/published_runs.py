"""Published training runs with their measured step times, as app.calc.calibration_runs'
MeasuredRun: what the built-in performance profiles are fitted to (app/calc/profiles/) and
what bench/planner_accuracy.py holds the planner to, each held out in turn.

One module because it is one table: each row is a run with its source and the place in it,
long because every number cites where it comes from; the functions below it only read it.

Every run names its primary source and the place in it. Where a paper gives throughput rather
than a step time, the step time is derived with the paper's own FLOP count (its formula is
named beside the run); where a layout detail is not published, the run says what is assumed.
Layout details not in the paper come from the authors' own launch scripts where those exist.

Dense runs only are fitted. DeepSeek-V3 (MoE, FP8, DualPipe) is reported beside them, not
fitted: the planner prices neither its FP8 matmuls nor DualPipe's hiding of the all-to-all.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from app.calc.calibration_runs import MeasuredRun
from app.calc.flops import megatron_flops_per_iteration
from app.calc.hardware import ACCELERATORS
from app.calc.model import PRESETS, ModelConfig
from app.calc.planner.costs import Costs
from app.calc.planner.published import RUNS as PAGE_RUNS
from app.calc.planner.published import request_for
from app.calc.planner.request import Layout, cluster, plan_request

SEQ_2048 = 2048
MEGATRON_TABLE_1 = (
    "Narayanan et al. 2021, arXiv:2104.04473, Table 1 (TFLOP/s per GPU counted with eq. (3), "
    "which includes the recompute's forward); micro-batch, interleaving and recompute from "
    "NVIDIA/Megatron-LM examples/sc21/run_table_1.sh, 'used to produce the results'"
)
KORTHIKANTI_TABLE_5 = (
    "Korthikanti et al. 2022, arXiv:2205.05198, Table 5 (iteration times) and Table 4 "
    "(configurations); times and layouts as Calculon (Isaev et al. SC'23) stores them, "
    "calculon/llm/validation.py and validation/seqsel/tab5/*.json; interleaving 3 for 175B "
    "and 530B is Calculon's reading"
)


def gpt(layers: int, hidden: int, heads: int, vocab: int = 51200, name: str = "GPT") -> ModelConfig:
    """A GPT-3-style model as Megatron-LM trains it: GeLU MLP of 4h, LayerNorm, biases,
    learned positions, tied embeddings."""
    return ModelConfig(
        layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn_hidden=4 * hidden,
        vocab=vocab, ffn_type="gelu", norm="layernorm", tied_embeddings=True,
        attention_bias=True, mlp_bias=True, learned_positions=SEQ_2048, name=name,
    )  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One published run, before it becomes a MeasuredRun."""

    name: str
    source: str
    model: ModelConfig
    accelerator: str  # hardware.ACCELERATORS
    memory: str  # gpus.GPUS
    nodes: int
    intra_node: str
    inter_node: str
    seq_len: int
    global_batch_sequences: int
    layout: Layout
    step_s: float
    options: dict[str, Any]
    family: str  # which paper's runs, for the report
    # The built-in profile fitted to it (app/calc/profiles/<profile>.json); None: reported,
    # not fitted, for the reason in `unfitted`
    profile: str | None = "published"
    unfitted: str = ""
    # Where the source gives it: the fullest GPU's memory as nvidia-smi shows it (what the
    # allocator reserved, the CUDA context included), which fits the profile's memory terms
    peak_memory_bytes: float | None = None
    # False: the step time is printed beside the fit, not fitted (the row says why); the
    # memory still fits the profile's memory terms
    time_fitted: bool = True


def _a100(nodes: int) -> dict[str, Any]:
    return {"accelerator": "a100-80gb-sxm", "memory": "a100-80gb", "nodes": nodes,
            "intra_node": "nvlink3", "inter_node": "ib-hdr"}  # fmt: skip


def _h100(nodes: int, inter_node: str = "ib-ndr") -> dict[str, Any]:
    return {"accelerator": "h100-sxm", "memory": "h100-80gb", "nodes": nodes,
            "intra_node": "nvlink4", "inter_node": inter_node}  # fmt: skip


MEGATRON_2021 = {"flash_attention": False, "dropout": True}


def _table_1() -> list[Row]:
    # (params, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s, micro-batch, v)
    table = (
        ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 16, 1),
        ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 16, 1),
        ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 16, 1),
        ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1),
        ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1),
        ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3),
        ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2),
        ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2),
        ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3),
        ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1),
    )
    rows = []
    for size, heads, hidden, layers, tp, pp, gpus, batch, tflops, mbs, v in table:
        flops = megatron_flops_per_iteration(batch, SEQ_2048, layers, hidden, 51200, True)
        rows.append(
            Row(
                name=f"megatron-t1-{size.lower()}",
                source=f"{MEGATRON_TABLE_1}; row {size}: {tflops} TFLOP/s per GPU",
                model=gpt(layers, hidden, heads, name=f"GPT {size}"),
                **_a100(gpus // 8),
                seq_len=SEQ_2048,
                global_batch_sequences=batch,
                layout=Layout(
                    dp=gpus // (tp * pp),
                    tp=tp,
                    pp=pp,
                    recompute="full",
                    micro_batch=mbs,
                    schedule="interleaved" if v > 1 else "1f1b",
                    virtual_stages=v,
                    sequence_parallel=False,
                ),  # fmt: skip
                step_s=flops / (gpus * tflops * 1e12),
                options=MEGATRON_2021,
                family="Megatron-LM weak scaling (A100)",
            )
        )
    return rows


def _table_5() -> list[Row]:
    # (name, heads, hidden, layers, pp, gpus, batch, micro-batch, v, full s, selective+SP s)
    table = (
        ("22b", 64, 6144, 48, 1, 8, 4, 4, 1, 1.42, 1.10),
        ("175b", 96, 12288, 96, 8, 64, 64, 1, 3, 18.13, 13.75),
        ("530b", 128, 20480, 105, 35, 280, 280, 1, 3, 49.05, 37.83),
        ("1t", 160, 25600, 128, 64, 512, 512, 1, 1, 94.42, 71.49),
    )
    rows = []
    for size, heads, hidden, layers, pp, gpus, batch, mbs, v, full_s, selective_s in table:
        for mode, sp, step_s in (("full", False, full_s), ("selective", True, selective_s)):
            rows.append(
                Row(
                    name=f"korthikanti-{size}-{mode}",
                    source=f"{KORTHIKANTI_TABLE_5}; {size.upper()} {mode}: {step_s} s",
                    model=gpt(layers, hidden, heads, name=f"GPT {size.upper()}"),
                    **_a100(gpus // 8),
                    seq_len=SEQ_2048,
                    global_batch_sequences=batch,
                    layout=Layout(
                        dp=gpus // (8 * pp),
                        tp=8,
                        pp=pp,
                        recompute=mode,
                        micro_batch=mbs,
                        schedule="interleaved" if v > 1 else "1f1b",
                        virtual_stages=v,
                        sequence_parallel=sp,
                    ),  # fmt: skip
                    step_s=step_s,
                    options={**MEGATRON_2021, "uneven_pipeline": layers % pp != 0},
                    family="Korthikanti et al. Table 5 (A100)",
                )
            )
    return rows


# Llama 3 does not publish v. Its Section 3.3.2 puts the drop from 43% MFU (DP 64, 32
# micro-batches) to 41% (DP 128, 16) on the smaller batch per DP group, and gives the bubble as
# (PP - 1) / (V M): (1 + 15 / (16 V)) / (1 + 15 / (32 V)) = 43 / 41 gives V = 9; 7 is the
# largest v whose 16 x v chunks the 126 layers can fill.
LLAMA3_V = 7

LLAMA3_128K = (
    "the step time is derived from the published MFU, and at 128K tokens the FLOP count behind "
    "it decides the answer: attention counted whole (as Megatron-LM's equation (3) and the "
    "planner count it) gives 15.4 s, counted causally 11.0 s; the paper says neither"
)
BIGSCIENCE_TOPOLOGIES = (
    "bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles-prequel.md, 'Rebalancing "
    "layers', table 'NHIDDEN=14336; NLAYERS=70; Model size: 176B' (02-28): BLOOM's shape on "
    "48 nodes of Jean Zay, global batch 2048, the BF16 optimizer and "
    "--pp-partition-method 'type:transformer|embedding' of the final run; 'Sec/it' at "
    "iteration 2 and 'Mem', nvidia-smi on the fullest GPU, read as GiB. Assumed: the rest "
    "of the options of tr11-176B-ml.slurm (activation checkpointing, ZeRO-1)"
)


# Runs whose data parallelism is ZeRO-style sharding (DeepSpeed's ZeRO-1 pipeline engine,
# metaseq's FSDP) rather than Megatron-LM's: a framework of its own, so a profile of its own.
ZERO_A100 = "zero-a100"

MT_NLG = gpt(105, 20480, 128, vocab=50272, name="MT-NLG 530B")
OPT_175B = gpt(96, 12288, 96, vocab=50272, name="OPT-175B")
NEMOTRON_340B = ModelConfig(
    layers=96, hidden=18432, heads=96, kv_heads=8, ffn_hidden=73728, vocab=256000,
    ffn_type="gelu", norm="layernorm", name="Nemotron-4 340B",
)  # fmt: skip
NEMOTRON_15B = ModelConfig(
    layers=32, hidden=6144, heads=48, kv_heads=8, ffn_hidden=24576, vocab=256000,
    ffn_type="gelu", norm="layernorm", name="Nemotron-4 15B",
)  # fmt: skip


def _others() -> list[Row]:
    rows = []
    for nodes, dp, step_s in ((280, 8, 60.1), (350, 10, 50.2), (420, 12, 44.4)):
        rows.append(
            Row(
                name=f"mt-nlg-530b-{nodes * 8}",
                source=(
                    "Smith et al. 2022, arXiv:2201.11990, Section 2.4: batch 1920 on 280, 350 "
                    f"and 420 DGX A100 servers, iteration time 60.1, 50.2 and 44.4 s; TP 8, PP "
                    f"35 (Section 3); this run {step_s} s. Assumed: micro-batch 1, full "
                    "recompute, ZeRO-1, DeepSpeed's non-interleaved 1F1B"
                ),
                model=MT_NLG,
                **_a100(nodes),
                seq_len=SEQ_2048,
                global_batch_sequences=1920,
                layout=Layout(
                    dp=dp, tp=8, pp=35, zero_stage=1, recompute="full", sequence_parallel=False
                ),  # fmt: skip
                step_s=step_s,
                options=MEGATRON_2021,
                family="MT-NLG 530B (A100)",
                profile=ZERO_A100,
            )
        )
    bloom = PAGE_RUNS["bloom-176b"]
    rows.append(
        Row(
            name="bloom-176b",
            source=(
                f"{bloom.source}. Step time: bigscience-workshop/bigscience, "
                "train/tr11-176B-ml/README.md, iteration 85376 at global batch 2048: 'elapsed "
                "time per iteration (s): 104.70'. Memory: "
                f"{BIGSCIENCE_TOPOLOGIES}; its row with 112 heads: 59 GB"
            ),
            model=bloom.model,
            accelerator="a100-80gb-sxm",
            memory="a100-80gb",
            nodes=48,
            intra_node="nvlink3",
            inter_node="opa",
            seq_len=SEQ_2048,
            global_batch_sequences=2048,
            layout=bloom.layout,
            step_s=104.70,
            options={**bloom.options, "dropout": False},
            family="BLOOM 176B (A100)",
            profile=ZERO_A100,
            peak_memory_bytes=59 * 2**30,
        )
    )
    opt_flops = megatron_flops_per_iteration(992, SEQ_2048, 96, 12288, 50272, True)
    rows.append(
        Row(
            name="opt-175b",
            source=(
                "Zhang et al. 2022, arXiv:2205.01068, Section 2.4: 992 80GB A100s, FSDP with "
                "Megatron-LM TP, 'up to 147 TFLOP/s per GPU'; facebookresearch/metaseq "
                "launcher/opt_baselines.py: --model-parallel-size 8, --no-reshard-after-forward "
                "(ZeRO-2), --checkpoint-activations with --distribute-checkpointed-activations, "
                "no gradient accumulation (8 sequences per rank). Assumed: 147 counts the "
                "recompute as Megatron's eq. (3) does"
            ),
            model=OPT_175B,
            **_a100(124),
            seq_len=SEQ_2048,
            global_batch_sequences=992,
            layout=Layout(
                dp=124, tp=8, zero_stage=2, recompute="full", micro_batch=8, sequence_parallel=False
            ),  # fmt: skip
            step_s=opt_flops / (992 * 147e12),
            options={**MEGATRON_2021, "distribute_saved_activations": True},
            family="OPT-175B (A100)",
            profile=ZERO_A100,
        )
    )
    llama = PRESETS["llama3-405b"]
    peak = ACCELERATORS["h100-sxm"].peak_flops["bf16"]
    for gpus, cp, dp, seq, per_dp, mfu in (
        (8192, 1, 64, 8192, 32, 0.43), (16384, 1, 128, 8192, 16, 0.41),
        (16384, 16, 8, 131072, 16, 0.38),
    ):  # fmt: skip
        tag = f"{gpus // 1024}k" + (f"-cp{cp}" if cp > 1 else "")
        layout = Layout(dp=dp, tp=8, pp=16, cp=cp, zero_stage=2, schedule="interleaved",
                        virtual_stages=LLAMA3_V)  # fmt: skip
        machines = cluster(nodes=gpus // 8, inter_node="roce-400g")
        request = plan_request(llama, machines, dp * per_dp * seq, seq, 1e12,
                               uneven_pipeline=True)  # fmt: skip
        model_flops = Costs(request).model_flops_per_token * request.global_batch_tokens
        rows.append(
            Row(
                name=f"llama3-405b-{tag}",
                source=(
                    "Grattafiori et al. 2024, arXiv:2407.21783, Table 4: "
                    f"{gpus} H100s, TP 8, CP {cp}, PP 16, DP {dp}, seq {seq}, batch/DP {per_dp}, "
                    f"BF16 MFU {mfu:.0%} (step time = the planner's model FLOPs at that MFU); "
                    "Section 3.3.2: interleaved schedule, no recompute at 8K, FSDP keeping "
                    "weights after forward (ZeRO-2, as app.calc.planner.published reads it), "
                    "RoCE 400 Gb/s. Assumed: micro-batch 1, "
                    f"v = {LLAMA3_V} (LLAMA3_V)"
                ),
                model=llama,
                **_h100(gpus // 8, "roce-400g"),
                seq_len=seq,
                global_batch_sequences=dp * per_dp,
                layout=layout,
                step_s=model_flops / (gpus * peak * mfu),
                options={"uneven_pipeline": True},
                family="Llama 3 405B (H100)",
                profile=None if cp > 1 else "published",
                unfitted=LLAMA3_128K if cp > 1 else "",
            )
        )
    for dp, batch, step_s in ((16, 768, 10.3), (32, 1536, 10.3), (64, 2304, 8.0)):
        rows.append(
            Row(
                name=f"nemotron4-340b-{dp * 96}",
                source=(
                    "NVIDIA 2024, Nemotron-4 340B technical report, arXiv:2406.11704, Section "
                    "2.3 and Table 2: DGX H100, TP 8, PP 12 interleaved, distributed optimizer, "
                    f"DP {dp}, batch {batch} x 4096, iteration time {step_s} s. Assumed: "
                    "micro-batch 1, v = 4, no recompute"
                ),
                model=NEMOTRON_340B,
                **_h100(dp * 12),
                seq_len=4096,
                global_batch_sequences=batch,
                layout=Layout(
                    dp=dp,
                    tp=8,
                    pp=12,
                    distributed_optimizer=True,
                    schedule="interleaved",
                    virtual_stages=4,
                ),  # fmt: skip
                step_s=step_s,
                options={},
                family="Nemotron-4 (H100)",
            )
        )
    rows.append(
        Row(
            name="nemotron4-340b-128",
            source=(
                "NVIDIA DGX Cloud benchmarking recipe 'nemotron340b-dgxc-benchmarking-a' "
                "(NGC catalog), NeMo 24.11, BF16: 128 H100s, TP 8, PP 8, VP 12, MBS 1, GBS 32, "
                "seq 4096, 'training step time = 4.77 s'. Assumed: distributed optimizer, no "
                "recompute"
            ),
            model=NEMOTRON_340B,
            **_h100(16),
            seq_len=4096,
            global_batch_sequences=32,
            layout=Layout(
                dp=2,
                tp=8,
                pp=8,
                distributed_optimizer=True,
                schedule="interleaved",
                virtual_stages=12,
            ),  # fmt: skip
            step_s=4.77,
            options={},
            family="Nemotron-4 (H100)",
        )
    )
    for dp, step_s in ((96, 0.57), (192, 0.58), (288, 0.64)):
        rows.append(
            Row(
                name=f"nemotron4-15b-{dp * 8}",
                source=(
                    "NVIDIA 2024, Nemotron-4 15B technical report, arXiv:2402.16819, Section 2 "
                    "and Table 2: DGX H100, TP 8, data parallel with a distributed optimizer, "
                    f"DP {dp}, batch {4 * dp} x 4096, iteration time {step_s} s. Assumed: 4 "
                    "sequences per micro-batch, no recompute"
                ),
                model=NEMOTRON_15B,
                **_h100(dp),
                seq_len=4096,
                global_batch_sequences=4 * dp,
                layout=Layout(dp=dp, tp=8, distributed_optimizer=True, micro_batch=4),
                step_s=step_s,
                options={},
                family="Nemotron-4 (H100)",
            )
        )
    return rows


def _measured(row: Row) -> MeasuredRun:
    from app.calc.planner.published import OMNI_PATH_JEAN_ZAY

    machines = cluster(row.accelerator, row.memory, 8, row.nodes, row.intra_node,
                       "ib-hdr" if row.inter_node == "opa" else row.inter_node)  # fmt: skip
    if row.inter_node == "opa":
        machines = replace(machines, inter_node=OMNI_PATH_JEAN_ZAY)
    request = plan_request(row.model, machines, row.global_batch_sequences * row.seq_len,
                           row.seq_len, 1e12, **row.options)  # fmt: skip
    return MeasuredRun(request, row.layout, row.step_s, row.peak_memory_bytes, row.name, row.source)


BIGSCIENCE_TIMES = (
    "each time is iteration 2 of a short test job, not a steady state, and the TP 8 row runs "
    "19% slower than TP 4 where the planner, fitted with it, prices 5% only by dropping "
    "NVLink to its lowest bound: a cost the model does not have (DeepSpeed's pipeline engine "
    "works per micro-batch, and TP 8 with DP 4 runs twice as many); the times are printed "
    "beside the fit, the memory is fitted"
)


def _bigscience_topologies() -> list[Row]:
    """BigScience's search for BLOOM's layout: the same model, cluster and code as the
    run, with its step time and memory measured on each layout tried."""
    bloom = next(row for row in _others() if row.name == "bloom-176b")
    # (dp, tp, pp, micro-batch, heads, Mem GB, Sec/it)
    table = (
        (4, 8, 12, 2, 64, 40, 121.63),
        (8, 4, 12, 2, 64, 59, 102.03),
        (8, 4, 12, 2, 128, 60, 105.89),
        (8, 4, 12, 4, 64, 73, 102.27),
    )
    rows = []
    for dp, tp, pp, b, heads, memory_gib, step_s in table:
        rows.append(
            replace(
                bloom,
                name=f"bloom-search-dp{dp}-tp{tp}-pp{pp}-b{b}-a{heads}",
                source=f"{BIGSCIENCE_TOPOLOGIES}; this row: {heads} heads, DP {dp}, TP {tp}, "
                f"PP {pp}, MBS {b}: {memory_gib} GB, {step_s} s",
                model=replace(bloom.model, heads=heads, kv_heads=heads),
                layout=replace(bloom.layout, dp=dp, tp=tp, pp=pp, micro_batch=b),
                step_s=step_s,
                family="BLOOM layout search (A100)",
                peak_memory_bytes=memory_gib * 2**30,
                time_fitted=False,
                unfitted=BIGSCIENCE_TIMES,
            )
        )
    # The table's row with BLOOM's own 112 heads (59 GB, 104.50 s) is the run's layout, which
    # trained at 104.70 s: its memory is on the run's row (bloom-176b).
    return rows


@cache
def rows() -> tuple[Row, ...]:
    return tuple(_table_1() + _table_5() + _others() + _bigscience_topologies())


@cache
def dense_runs() -> tuple[MeasuredRun, ...]:
    """Every dense published run with a measured (or derived) step time."""
    return tuple(_measured(row) for row in rows())


def runs_of(profile: str) -> tuple[MeasuredRun, ...]:
    """The runs the built-in profile `profile` is fitted to."""
    return tuple(run for run, row in zip(dense_runs(), rows(), strict=True)
                 if row.profile == profile and row.time_fitted)  # fmt: skip


def memory_runs_of(profile: str) -> tuple[MeasuredRun, ...]:
    """The runs that fit only the memory terms of the built-in profile `profile`."""
    return tuple(run for run, row in zip(dense_runs(), rows(), strict=True)
                 if row.profile == profile and not row.time_fitted)  # fmt: skip


def row_of(name: str) -> Row:
    return next(row for row in rows() if row.name == name)


PROFILE_TITLES = {
    "published": "Megatron-LM and Megatron-style runs (Megatron-LM, Korthikanti et al., "
    "Nemotron-4, Llama 3), A100 and H100",
    ZERO_A100: "ZeRO-style data parallelism on A100 (MT-NLG's DeepSpeed, BLOOM's "
    "Megatron-DeepSpeed, OPT's FSDP)",
}


def deepseek_v3() -> MeasuredRun:
    """DeepSeek-V3 as the planner page has it (app.calc.planner.published), reported beside
    the dense runs: its published figure is tokens/s per GPU."""
    run = PAGE_RUNS["deepseek-v3"]
    request = request_for(run)
    step_s = request.global_batch_tokens / (run.published * run.cluster.gpus)
    return MeasuredRun(request, run.layout, step_s, None, run.slug, run.source)
