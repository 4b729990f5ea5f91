"""The DDP vs ZeRO-1/2/3 page: what the paper predicts, what torch's versions must measure.

One module because app/live/pages/ holds one module per demo page (its __init__ imports each
module's PAGE): the prediction and the verdict that reads it are this page's.

Two predictions per strategy, both from app.calc: the ZeRO paper's (Psi split evenly,
app.calc.memory and app.calc.comm_volume) and the exact one for torch's implementations
(whole tensors, padded shards, Adam's step counters: app.calc.sharding). Measured bytes must
equal the exact one; the page explains each gap between the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from app.calc.activations import (
    TOKEN_ID_BYTES,
    ActivationSetup,
    stage_activations,
    torch_forward_extra_bytes,
)
from app.calc.comm import Collective, ring_bytes_per_rank
from app.calc.comm_volume import zero_elements
from app.calc.cuda_allocator import allocated_bounds
from app.calc.memory import FP32_ADAM, ModelStates, model_states_per_gpu
from app.calc.model import ModelConfig
from app.calc.sharding import (
    adam_state_bytes,
    ddp_bucket_bytes,
    greedy_partition,
    numel,
    padded_shard_elements,
    padding_elements,
    shard_elements,
)
from app.formatting import latex_int, latex_number
from app.i18n import N_
from app.live.demo_page import DemoPage
from app.live.verdict import Check, check
from demos.specs.zero_stages import HEADS, MLP_RATIO, ZeroStagesParams

FP32_BYTES = 4
STRATEGIES = ("ddp", "zero1", "zero2", "zero3")
STRATEGY_NAMES = {
    "ddp": "DDP",
    "zero1": N_("ZeRO-1 (ZeroRedundancyOptimizer)"),
    "zero2": N_("ZeRO-2 (FSDP2, no reshard after forward)"),
    "zero3": N_("ZeRO-3 (FSDP2, reshard after forward)"),
}
STAGE = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}
PHASES = (N_("forward"), N_("backward"), N_("step"))  # marked: the page shows them translated
MEMORY_KINDS = ("params", "grads", "optimizer", "params_after_forward")


@dataclass(frozen=True)
class PredictedCollective:
    """Collectives of one kind in one phase of a step, as torch's implementation issues them."""

    phase: str
    kind: str
    count: int | None  # None: not predicted (DDP's bucket count depends on arrival order)
    payload_bytes: int
    ranks: int

    @property
    def logical_bytes(self) -> float:
        return ring_bytes_per_rank(Collective(self.kind), self.payload_bytes, self.ranks)


@dataclass(frozen=True)
class ZeroPrediction:
    params: ZeroStagesParams
    world_size: int

    @cached_property
    def shapes(self) -> list[tuple[int, ...]]:
        return self.params.shapes()

    @property
    def param_count(self) -> int:
        return sum(numel(s) for s in self.shapes)

    @property
    def tensor_count(self) -> int:
        return len(self.shapes)

    @property
    def adam_step_bytes(self) -> int:
        """Adam's `step` scalars, one per parameter tensor (no elements of m or v)."""
        return adam_state_bytes(0, self.tensor_count)

    @property
    def model_bytes(self) -> int:
        return FP32_BYTES * self.param_count

    @property
    def ddp_bucket_bytes(self) -> int:
        """DDP's gradient buckets (DDP and ZeRO-1): every fp32 gradient again, since the demo
        keeps torch's default gradient_as_bucket_view=False (app.calc.sharding)."""
        return int(ddp_bucket_bytes(self.param_count, FP32_BYTES))

    @property
    def padded_shard_bytes(self) -> int:
        """One rank's FSDP2 shard of every parameter, padding included."""
        n = self.world_size
        return FP32_BYTES * sum(padded_shard_elements(s, n) for s in self.shapes)

    @property
    def padding_bytes(self) -> int:
        return FP32_BYTES * padding_elements(self.shapes, self.world_size)

    @property
    def fsdp_units(self) -> int:
        """All-gathers per pass: one per block and one for the root's own parameters."""
        return len(self.params.shape_groups())

    @property
    def model_config(self) -> ModelConfig:
        """The demo's TinyGPT in the calculators' terms: GeLU MLP, LayerNorm, biases, learned
        positions, untied output head."""
        p = self.params
        return ModelConfig(
            layers=p.layers, hidden=p.d_model, heads=HEADS, kv_heads=HEADS,
            ffn_hidden=MLP_RATIO * p.d_model, vocab=p.vocab, ffn_type="gelu", norm="layernorm",
            attention_bias=True, mlp_bias=True, learned_positions=p.seq_len, name="TinyGPT",
        )  # fmt: skip

    @property
    def activation_bytes(self) -> int:
        """The training-memory calculator's activations for one rank's batch (app.calc.
        activations: fp32, no dropout, attention that keeps no score matrix, one stage)."""
        stage = stage_activations(self.model_config, self._activation_setup,
                                  self.params.layers, 1, first_stage=True,
                                  last_stage=True)  # fmt: skip
        return int(stage.total)

    @property
    def forward_kept_bytes(self) -> int:
        """What torch keeps at the end of this model's forward: the calculator's count, plus
        what its per-layer formula leaves out (app.calc.activations), less the token ids,
        which this page counts as the batch."""
        p = self.params
        return (
            self.activation_bytes
            - TOKEN_ID_BYTES * p.batch * p.seq_len
            + torch_forward_extra_bytes(
                self.model_config, self._activation_setup, targets_copied=p.batch > 1
            )
        )

    @property
    def _activation_setup(self) -> ActivationSetup:
        """One rank's batch as the demo runs it: fp32, no dropout, no score matrix kept."""
        p = self.params
        return ActivationSetup(seq_len=p.seq_len, micro_batch=p.batch, flash_attention=True,
                               dropout=False, bytes_per_value=FP32_BYTES)  # fmt: skip

    def paper(self, strategy: str) -> ModelStates:
        """The ZeRO paper's model states per rank, Psi split evenly (fp32 Adam: 4 + 4 + 8)."""
        return model_states_per_gpu(self.param_count, self.world_size, STAGE[strategy], FP32_ADAM)

    def paper_logical_bytes(self, strategy: str) -> float:
        """The paper's bytes sent per rank per step (Section 7): 2 or 3 (N-1)/N * Psi."""
        return FP32_BYTES * zero_elements(self.param_count, self.world_size, STAGE[strategy])

    @cached_property
    def _zero1_owner(self) -> list[int]:
        return greedy_partition([numel(s) for s in self.shapes], self.world_size)

    def memory_by_ranks(
        self, strategy: str, measured: list[dict[str, Any]]
    ) -> list[tuple[str, dict[str, Any], dict[str, int]]]:
        """The memory table's rows: consecutive ranks whose measured and predicted bytes are
        the same share one row ("0–63"), so 64 ranks of DDP are 4 rows rather than 256."""
        pairs = [(mem, self.memory(strategy, rank)) for rank, mem in enumerate(measured)]
        return [(ranks, mem, exact) for ranks, (mem, exact) in by_rank_runs(pairs)]

    def buckets_by_ranks(self, buckets: list[dict[str, Any] | None]) -> list[tuple[str, int]]:
        """DDP's bucket bytes as it records them, one row per run of ranks alike."""
        return by_rank_runs([sum(b["sizes"]) for b in buckets if b is not None])

    def fullest_peaks(self, summary: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
        """Per strategy, the rank whose last step peaked highest: (strategy, rank, its traced
        peak (demos.zero_stages.peak_terms), with the allocator's peak of the same step on
        CUDA, else None)."""
        columns = []
        for strategy, measured in summary["strategies"].items():
            peaks = measured.get("peak") or []
            if not peaks:
                continue
            rank = max(range(len(peaks)), key=lambda r: peaks[r]["bytes"])
            cuda = (measured.get("cuda") or [None] * len(peaks))[rank]
            allocator = cuda["step"]["max_allocated"] if cuda else None
            columns.append((strategy, rank, {**peaks[rank], "allocator": allocator}))
        return columns

    @property
    def fsdp_unit_bytes(self) -> list[int]:
        """Each FSDP2 unit gathered whole (padded): every block's, then the root's own."""
        n = self.world_size
        return [FP32_BYTES * n * sum(padded_shard_elements(s, n) for s in group)
                for group in self.params.shape_groups()]  # fmt: skip

    def memory(self, strategy: str, rank: int) -> dict[str, int]:
        """Exact bytes of distinct storage on `rank` after a step (and params after forward)."""
        full = self.model_bytes
        if strategy == "ddp":
            optimizer = adam_state_bytes(self.param_count, self.tensor_count)
            return {"params": full, "grads": full, "optimizer": optimizer,
                    "params_after_forward": full}  # fmt: skip
        if strategy == "zero1":
            mine = [s for s, owner in zip(self.shapes, self._zero1_owner, strict=True)
                    if owner == rank]  # fmt: skip
            optimizer = adam_state_bytes(sum(numel(s) for s in mine), len(mine))
            return {"params": full, "grads": full, "optimizer": optimizer,
                    "params_after_forward": full}  # fmt: skip
        shard = self.padded_shard_bytes
        local = sum(shard_elements(s, self.world_size, rank) for s in self.shapes)
        # ZeRO-2 keeps the gathered (padded) parameters from forward until backward.
        after_forward = shard * self.world_size if strategy == "zero2" else shard
        return {
            "params": shard,
            "grads": shard,
            "optimizer": adam_state_bytes(local, self.tensor_count),
            "params_after_forward": after_forward,
        }

    def collectives(self, strategy: str) -> list[PredictedCollective]:
        """What torch issues in a steady step (from the third on, row 1's counted step: DDP
        rebuilds its buckets in the second)."""
        n, full = self.world_size, self.model_bytes
        if strategy in ("ddp", "zero1"):
            calls = [PredictedCollective("backward", "all_reduce", None, full, n)]
            if strategy == "zero1":
                calls.append(PredictedCollective("step", "broadcast", self.tensor_count, full, n))
            return calls
        gathered = self.padded_shard_bytes * n
        units = self.fsdp_units
        calls = [PredictedCollective("forward", "all_gather", units, gathered, n)]
        if strategy == "zero3":
            calls.append(PredictedCollective("backward", "all_gather", units, gathered, n))
        calls.append(PredictedCollective("backward", "reduce_scatter", units, gathered, n))
        return calls

    def logical_bytes(self, strategy: str) -> float:
        return sum(call.logical_bytes for call in self.collectives(strategy))

    def rows(self) -> list[dict[str, Any]]:
        """One row per strategy for the prediction panel."""
        return [
            {
                "strategy": s,
                "name": STRATEGY_NAMES[s],
                "paper": self.paper(s),
                "paper_logical_bytes": self.paper_logical_bytes(s),
                "memory": [self.memory(s, r) for r in range(self.world_size)],
                "logical_bytes": self.logical_bytes(s),
            }
            for s in STRATEGIES
        ]

    @property
    def formula_latex(self) -> str:
        p, n = self.param_count, self.world_size
        return (
            rf"\Psi = {p}\text{{ parameters}},\ N = {n}:\quad"
            r"\text{DDP: } 16\Psi,\quad \text{ZeRO-1: } 8\Psi + \frac{8\Psi}{N},\quad"
            r"\text{ZeRO-2: } 4\Psi + \frac{12\Psi}{N},\quad \text{ZeRO-3: } \frac{16\Psi}{N}"
            r"\ \text{bytes per rank}"
        )

    @property
    def traffic_latex(self) -> str:
        n = self.world_size
        four_psi = latex_int(self.model_bytes)
        two = self.paper_logical_bytes("ddp")
        three = self.paper_logical_bytes("zero3")
        return (
            r"\text{DDP, ZeRO-1, ZeRO-2: } 2\tfrac{N-1}{N}\cdot 4\Psi"
            rf" = 2\cdot\tfrac{{{n - 1}}}{{{n}}}\cdot {four_psi}"
            rf" = {latex_number(two)}\ \text{{B}};\quad \text{{ZeRO-3: }} 3\tfrac{{N-1}}{{N}}"
            rf"\cdot 4\Psi = {latex_number(three)}\ \text{{B}}"
        )


def by_rank_runs(values: list[Any]) -> list[tuple[str, Any]]:
    """(ranks, value) for each run of consecutive ranks with equal values: ("0–63", v)."""
    runs: list[tuple[int, int, Any]] = []
    for rank, value in enumerate(values):
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], rank, value)
        else:
            runs.append((rank, rank, value))
    return [(str(a) if a == b else f"{a}–{b}", value) for a, b, value in runs]


SHORT_NAMES = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3"}
# Why torch's implementations hold and send other bytes than the ZeRO paper's formulas: the
# page's explanation, one line per strategy. Explained only where the measurement equals the
# exact model of the implementation (ZeroPrediction.memory and .collectives).
MEMORY_REASONS = {
    "ddp": N_("Adam keeps a 4-byte step counter per parameter tensor"),
    "zero1": N_(
        "Adam's step counters, and ZeroRedundancyOptimizer shards whole tensors, so ranks "
        "differ a little"
    ),
    "zero2": N_(
        "FSDP2 frees the gathered weights after backward, where the paper keeps them; shard "
        "padding and Adam's step counters on top"
    ),
    "zero3": N_("FSDP2 pads each shard to the same size, and Adam keeps a step counter per tensor"),
}
TRAFFIC_REASONS = {
    "ddp": "",
    "zero1": N_(
        "torch's ZeroRedundancyOptimizer broadcasts each updated tensor where the paper all-gathers"
    ),
    "zero2": N_("FSDP2 sends each shard's padding too"),
    "zero3": N_("FSDP2 sends each shard's padding too"),
}
LOSSES = {True: N_("coincide"), False: N_("differ")}
# One line in the verdict, which must fit a 1280x800 screen; the page's list says it in full.
ACTIVATION_REASON = N_(
    "the per-layer count leaves out norm statistics, log-sum-exp, targets, position ids and the "
    "loss"
)
BUCKET_ROUNDING = N_(
    "the CUDA caching allocator rounds each bucket up to 512 B, and may hand a bucket over 1 MiB "
    "a cached block up to 1 MiB larger"
)


def verdict(
    summary: dict[str, Any], prediction: ZeroPrediction, backend: str | None
) -> list[Check]:
    """Per strategy, the model states of the fullest rank and the bytes sent in the last step
    (rank 0's), against the ZeRO paper; then the loss curves against DDP's."""
    checks = []
    for s, m in summary["strategies"].items():
        scope = SHORT_NAMES[s]
        exact_memory = all(
            mem[kind] == prediction.memory(s, rank)[kind]
            for rank, mem in enumerate(m["memory"])
            for kind in MEMORY_KINDS
        )
        fullest = max(mem["params"] + mem["grads"] + mem["optimizer"] for mem in m["memory"])
        paper_bytes = prediction.paper(s).total_bytes
        # A total equal to the paper's is only equal when every rank's every state is where
        # torch's layout puts it, and a phase's traffic where torch sends it.
        checks.append(
            check(N_("Model states, fullest rank"), fullest, paper_bytes,
                  scope=scope, reason=MEMORY_REASONS[s], explained=exact_memory,
                  agrees=fullest == paper_bytes and exact_memory)
        )  # fmt: skip
        exact_traffic = m["logical_bytes"] == prediction.logical_bytes(s) and all(
            _measured_logical(m, call) == call.logical_bytes for call in prediction.collectives(s)
        )
        paper_traffic = prediction.paper_logical_bytes(s)
        checks.append(
            check(N_("Logical bytes sent per step"), m["logical_bytes"], paper_traffic,
                  scope=scope, reason=TRAFFIC_REASONS[s],
                  explained=exact_traffic and bool(TRAFFIC_REASONS[s]),
                  agrees=m["logical_bytes"] == paper_traffic and exact_traffic)
        )  # fmt: skip
        if any(m.get("buckets") or []):
            checks += _bucket_checks(m, prediction, scope)
    if (ddp := summary["strategies"].get("ddp")) and ddp.get("peak"):
        kept = max(peak["forward_kept"] for peak in ddp["peak"])
        checks.append(
            check(N_("Activations kept at the end of forward"), kept, prediction.activation_bytes,
                  scope="DDP", reason=ACTIVATION_REASON,
                  explained=kept == prediction.forward_kept_bytes)
        )  # fmt: skip
    checks.append(
        check(N_("Loss curves vs DDP's"), LOSSES[summary["correct"]], LOSSES[True],
              unit="text")
    )  # fmt: skip
    return checks


def _bucket_checks(measured: dict[str, Any], prediction: ZeroPrediction, scope: str) -> list[Check]:
    """DDP's buckets on the fullest rank, as DDP records them after the last step, against a
    second copy of the gradients; on CUDA also what its constructor left allocated, which
    must lie within the caching allocator's blocks for the buckets it built then
    (app.calc.cuda_allocator)."""
    buckets = measured["buckets"]
    recorded = max(sum(b["sizes"]) for b in buckets)
    checks = [
        check(N_("DDP's gradient buckets, fullest rank"), recorded,
              prediction.ddp_bucket_bytes, scope=scope)
    ]  # fmt: skip
    if all(b["allocated"] is not None for b in buckets):
        fullest = max(buckets, key=lambda b: b["allocated"])
        low, high = allocated_bounds(fullest["built"])
        checks.append(
            check(N_("DDP's buckets as the CUDA allocator counts them, fullest rank"),
                  fullest["allocated"], prediction.ddp_bucket_bytes, scope=scope,
                  reason=BUCKET_ROUNDING, explained=low <= fullest["allocated"] <= high)
        )  # fmt: skip
    return checks


def _measured_logical(measured: dict[str, Any], call: PredictedCollective) -> float:
    found = [c for c in measured["phases"][call.phase]["collectives"] if c["kind"] == call.kind]
    return found[0]["logical_bytes"] if found else 0.0


def chart_points(event: dict[str, Any], prediction: ZeroPrediction) -> dict[str, Any]:
    """The loss of this step (mean over ranks) and each rank's model states."""
    ranks = event["ranks"]
    return {
        "strategy": ranks[0]["strategy"],
        "step": ranks[0]["step"],
        "loss": sum(r["loss"] for r in ranks) / len(ranks),
        "memory": [{"rank": r["rank"], **r["memory"]} for r in ranks],
        "strategies": list(STRATEGIES),
    }


PAGE = DemoPage(
    demo="zero_stages",
    slug="ddp-vs-zero",
    title=N_("DDP vs ZeRO-1, ZeRO-2 and ZeRO-3"),
    teaches=N_(
        "One tiny transformer under four strategies: each rank's parameters, gradients "
        "and Adam state, and every collective's bytes, beside the ZeRO paper's formulas."
    ),
    cards=("zero-stages", "fsdp2", "dp-vs-ddp"),
    params=ZeroStagesParams,
    labels={
        "width": N_("Width"),
        "layers": N_("Layers"),
        "vocab": N_("Vocabulary"),
        "seq_len": N_("Sequence length"),
        "batch": N_("Batch per rank"),
        "steps": N_("Steps"),
        "bucket_cap_mb": N_("DDP bucket (MB)"),
        "model_scale": N_("Model scale"),
    },
    predict=ZeroPrediction,
    verdict=verdict,
    chart_data=chart_points,
    scripts=("js/demo-zero-stages.js",),
    passes=N_(
        "bytes (memory, logical and wire) from a counted Adam step, probes on; time from the "
        "clean Adam step just before it, no probe. Each row is those two steps."
    ),
)
