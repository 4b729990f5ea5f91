"""DDP vs ZeRO-1 vs ZeRO-2 vs ZeRO-3: one tiny transformer, the same data, four strategies.

Every rank trains the same model (same seed) on its own batches (same seeds per strategy) for
a few fp32 Adam steps under each strategy in turn:

- DDP: DistributedDataParallel, gradients all-reduced in buckets during backward;
- ZeRO-1: torch's ZeroRedundancyOptimizer over DDP: Adam state sharded by whole tensors,
  each rank updates the tensors it owns and broadcasts them;
- ZeRO-2 and ZeRO-3: FSDP2 `fully_shard` on every block and on the root, without and with
  resharding the parameters after forward.

For DDP and ZeRO-1 the gradient buckets DDP builds are read from its own record (the bucket
sizes its logging data lists), and on CUDA what its constructor left allocated
(demos.live_bytes.cuda_allocator_window): with torch's default
gradient_as_bucket_view=False the buckets are a second copy of every gradient
(app.calc.sharding).

Each row of a strategy is two training steps. The first is clean and timed (no probe: the
counter would double a small model's step). The second is counted, with three phases (forward,
backward, optimizer step); model-state bytes are read after it (and the registered parameters
after forward), outside the collectives' way. Its loss must coincide with DDP's at the same
step: same math, other memory.

The counted step also runs under `LiveBytesTrace`, which finds the most tensor bytes alive at
once in the step and splits them by what they are (`peak_terms`): the model states, DDP's
buckets, FSDP2's gathered parameters, and what forward, backward and the optimizer made. On
CUDA the allocator's peak of the same step stands beside it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from demos.live_bytes import LiveBytesTrace, cuda_allocator_window
from demos.memory_probes import cuda_memory, model_state_bytes, optimizer_tensors, storage_bytes
from demos.probes import CountedStep, RankInfo, TimedStep, WireMeter
from demos.specs.zero_stages import HEADS, MLP_RATIO, ZeroStagesParams

WARMUP: dict[str, Any] = {
    "width": 16,
    "layers": 1,
    "vocab": 8,
    "seq_len": 4,
    "batch": 1,
    "steps": 3,
    "bucket_cap_mb": 25,
}
PRELOAD: tuple[str, ...] = (
    "torch.nn.parallel",
    "torch.distributed.optim",
    "torch.distributed.fsdp",
    "torch.distributed.device_mesh",
    "torch.distributed.tensor",
)

STRATEGIES = ("ddp", "zero1", "zero2", "zero3")
PHASES = ("forward", "backward", "step")
SEED = 1234
LEARNING_RATE = 1e-3
# FSDP's reduce-scatter sums in another order than DDP's all-reduce: equal to float32 noise.
LOSS_RELATIVE_TOLERANCE = 1e-4


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, MLP_RATIO * width)
        self.down = nn.Linear(MLP_RATIO * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, seq, HEADS, width // HEADS).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, params: ZeroStagesParams) -> None:
        super().__init__()
        d = params.d_model
        self.tok = nn.Embedding(params.vocab, d)
        self.pos = nn.Embedding(params.seq_len, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(params.layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, params.vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


_meshes: dict[str, Any] = {}


def _mesh(rank: RankInfo) -> Any:
    """One device mesh over every rank, made once: a new one per job would add groups."""
    from torch.distributed.device_mesh import init_device_mesh

    if rank.device.type not in _meshes:
        _meshes[rank.device.type] = init_device_mesh(rank.device.type, (rank.world_size,))
    return _meshes[rank.device.type]


class Built(NamedTuple):
    model: nn.Module  # the module to call
    holder: nn.Module  # the module holding the parameters
    optimizer: torch.optim.Optimizer
    buckets: dict[str, Any] | None  # DDP's gradient buckets (DDP and ZeRO-1), as measured


def build(strategy: str, rank: RankInfo, params: ZeroStagesParams) -> Built:
    torch.manual_seed(SEED)
    model = TinyGPT(params).to(rank.device)
    shapes = [tuple(p.shape) for p in model.parameters()]
    if shapes != params.shapes():
        raise RuntimeError(f"model shapes {shapes} differ from the spec's {params.shapes()}")
    if strategy in ("ddp", "zero1"):
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [rank.device.index] if rank.device.type == "cuda" else None
        with cuda_allocator_window(rank.device) as allocated:
            ddp = DistributedDataParallel(
                model, device_ids=device_ids, bucket_cap_mb=params.bucket_cap_mb
            )
        buckets = {"allocated": allocated.net_bytes, "built": bucket_sizes(ddp)}
        if strategy == "ddp":
            optimizer = torch.optim.Adam(ddp.parameters(), lr=LEARNING_RATE)
            return Built(ddp, model, optimizer, buckets)
        from torch.distributed.optim import ZeroRedundancyOptimizer

        optimizer = ZeroRedundancyOptimizer(
            ddp.parameters(), optimizer_class=torch.optim.Adam, lr=LEARNING_RATE
        )
        return Built(ddp, model, optimizer, buckets)
    from torch.distributed.fsdp import fully_shard

    reshard = strategy == "zero3"
    mesh = _mesh(rank)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    return Built(model, model, torch.optim.Adam(model.parameters(), lr=LEARNING_RATE), None)


def bucket_sizes(ddp: nn.Module) -> list[int]:
    """Bytes of each bucket DDP holds now, as its own logging records them ("33024, 33280"):
    the buckets it rebuilt in gradient-arrival order after its first step, if it has."""
    data = ddp._get_ddp_logging_data()  # type: ignore[operator]
    recorded = str(data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes", ""))
    return [int(size) for size in recorded.split(",") if size.strip()]


def batch_for(params: ZeroStagesParams, rank: RankInfo, step: int) -> torch.Tensor:
    """This rank's tokens for one step: the same for every strategy."""
    generator = torch.Generator().manual_seed(SEED + 1000 * step + rank.rank)
    tokens = torch.randint(params.vocab, (params.batch, params.seq_len + 1), generator=generator)
    return tokens.to(rank.device)


def _phase_row(step: CountedStep, phase: str, wire: WireMeter) -> dict[str, Any]:
    return {
        "collectives": step.counter.by_kind(phase),
        "logical_bytes": step.counter.logical_bytes(phase),
        "wire_bytes": wire.bytes_,
    }


def counted_step(
    model: nn.Module,
    holder: nn.Module,
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    rank: RankInfo,
) -> dict[str, Any]:
    """One training step inside a counted window, phase by phase; then its model states.

    On CUDA ranks, `cuda` holds the allocator's reading after each phase (its `max_allocated`
    after "step" is the step's peak: train() resets it before the step); None on CPU.
    """
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    phases: dict[str, dict[str, Any]] = {}
    allocator: dict[str, dict[str, int] | None] = {}
    trace = LiveBytesTrace(
        track=[tokens, *holder.parameters(), *optimizer_tensors(optimizer)],
        resizable=gathered_parameters(holder),
        scopes=(FSDP_SCOPE,),
    )
    with CountedStep(rank.sync) as step, trace:
        trace.mark("forward")
        with step.counter.phase("forward"), WireMeter() as wire:
            # The logits are not bound to a name, so they die once cross-entropy has read them,
            # as in a training loop: autograd keeps only the log-softmax (the trace's count).
            loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        params_after_forward = storage_bytes(holder.parameters())
        phases["forward"] = _phase_row(step, "forward", wire)
        allocator["forward"] = cuda_memory(rank.device)
        trace.mark("backward")
        with step.counter.phase("backward"), WireMeter() as wire:
            loss.backward()
        phases["backward"] = _phase_row(step, "backward", wire)
        allocator["backward"] = cuda_memory(rank.device)
        trace.mark("step")
        with step.counter.phase("step"), WireMeter() as wire:
            optimizer.step()
        phases["step"] = _phase_row(step, "step", wire)
        allocator["step"] = cuda_memory(rank.device)
    memory = model_state_bytes(holder, optimizer)
    memory["params_after_forward"] = params_after_forward
    peak = peak_terms(trace, holder, optimizer, tokens)
    optimizer.zero_grad(set_to_none=True)
    return {
        **step.as_dict(rank.rank),
        "loss": loss.item(),
        "phases": phases,
        "memory": memory,
        "peak": peak,
        "cuda": allocator if rank.device.type == "cuda" else None,
    }


PEAK_TERMS = ("params", "grads", "optimizer", "batch", "buckets", "gathered", "fsdp_buffers",
              "forward", "backward", "step")  # fmt: skip
# FSDP2 runs its all-gathers and reduce-scatters inside record_function scopes named so.
FSDP_SCOPE = "FSDP::"


def peak_terms(
    trace: LiveBytesTrace, holder: nn.Module, optimizer: torch.optim.Optimizer, tokens: torch.Tensor
) -> dict[str, Any]:
    """The most tensor bytes alive at once in the traced step, split by what they are.

    Read right after the step, while the gradients are still set. Storages that existed before
    the step and are none of the named tensors are DDP's buckets (its reducer writes them with
    `mul(out=)`; nothing else that old is written in a step). Those made inside FSDP2's own
    scopes are its communication buffers (all-gather outputs, reduce-scatter inputs and
    outputs). The rest is named by the phase that made it: forward's activations and outputs,
    backward's gradients of activations and FSDP2's unsharded gradients, the optimizer's
    temporaries.
    """
    peak = trace.peak(PHASES)
    named = {
        "params": trace.live_ids(holder.parameters()),
        "grads": trace.live_ids(p.grad for p in holder.parameters() if p.grad is not None),
        "optimizer": trace.live_ids(optimizer_tensors(optimizer)),
        "batch": trace.live_ids([tokens]),
        "gathered": trace.live_ids(gathered_parameters(holder)),
    }
    terms = dict.fromkeys(PEAK_TERMS, 0)
    for id_, bytes_ in trace.alive_after(peak.index).items():
        term = next((name for name, ids in named.items() if id_ in ids), None)
        if term is None and trace.existed(id_):
            term = "buckets"
        elif term is None:
            term = "fsdp_buffers" if trace.born_scope(id_) == FSDP_SCOPE else trace.born_in(id_)
        terms[term] += bytes_
    # What forward leaves for backward, read where forward ends, wherever the peak falls.
    timeline = trace.timeline()
    end_of_forward = max(i for i, row in enumerate(timeline) if row[0] == "forward")
    after_forward = trace.alive_after(end_of_forward)
    return {
        "bytes": peak.bytes_,
        "phase": peak.label,
        "op": peak.op,
        "terms": terms,
        "forward_kept": sum(b for i, b in after_forward.items() if trace.born_in(i) == "forward"),
        "gathered_after_forward": sum(after_forward.get(i, 0) for i in named["gathered"]),
    }


def gathered_parameters(module: nn.Module) -> list[torch.Tensor]:
    """FSDP2's buffers for each unit's gathered (unsharded) parameters, which it resizes to 0
    bytes after use and back before the next all-gather (`FSDPParam.all_gather_outputs`, a
    private attribute of torch 2.11 and 2.13); [] for a module FSDP2 does not shard."""
    tensors: list[torch.Tensor] = []
    for submodule in module.modules():
        get_state = getattr(submodule, "_get_fsdp_state", None)
        if get_state is None:
            continue
        state = get_state()
        groups = getattr(state, "_fsdp_param_groups", None)
        if groups is None:  # torch before the plural
            groups = [g] if (g := getattr(state, "_fsdp_param_group", None)) else []
        for group in groups:
            for fsdp_param in group.fsdp_params:
                tensors += fsdp_param.all_gather_outputs
    return tensors


def plain_step(model: nn.Module, optimizer: torch.optim.Optimizer, tokens: torch.Tensor) -> float:
    """The same step without any probe or window: what bench/probe_overhead.py compares to."""
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def timed_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, tokens: torch.Tensor, rank: RankInfo
) -> float:
    """Seconds of one clean training step: no counter, no wire meter, no memory accounting."""
    with TimedStep(rank.sync) as window:
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return window.time_s


def train(strategy: str, rank: RankInfo, params: ZeroStagesParams) -> Iterator[dict[str, Any]]:
    """One strategy's rows on this rank: per row, a clean timed step, then a counted one.

    Timed first, so the first counted step is DDP's second, where it rebuilds its buckets.
    """
    model, holder, optimizer, buckets = build(strategy, rank, params)
    for index in range(params.steps):
        rank.sync()
        dist.barrier()
        time_s = timed_step(model, optimizer, batch_for(params, rank, 2 * index), rank)
        if rank.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(rank.device)
        rank.sync()
        dist.barrier()
        row = counted_step(model, holder, optimizer, batch_for(params, rank, 2 * index + 1), rank)
        if buckets is not None:
            row["buckets"] = {**buckets, "sizes": bucket_sizes(model)}
        yield {"buckets": None, **row, "time_s": time_s, "strategy": strategy, "step": index}


def run(rank: RankInfo, params: ZeroStagesParams) -> Iterator[dict[str, Any]]:
    """Every strategy in turn; a row is correct when its loss matches DDP's at that step."""
    ddp_losses: list[float] = []
    for strategy in STRATEGIES:
        for row in train(strategy, rank, params):
            if strategy == "ddp":
                ddp_losses.append(row["loss"])
            reference = ddp_losses[row["step"]]
            close = abs(row["loss"] - reference) <= LOSS_RELATIVE_TOLERANCE * max(
                1.0, abs(reference)
            )
            yield {**row, "correct": math.isfinite(row["loss"]) and close}


def summary(
    params: ZeroStagesParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per strategy: its last step on every rank (memory, traffic), and its loss curve."""
    strategies: dict[str, Any] = {}
    for strategy in STRATEGIES:
        events = [e for e in measurements if e["ranks"][0]["strategy"] == strategy]
        if not events:
            continue
        last = events[-1]["ranks"]
        strategies[strategy] = {
            "step": last[0]["step"],
            "memory": [row["memory"] for row in last],
            "phases": {phase: last[0]["phases"][phase] for phase in PHASES},
            "logical_bytes": last[0]["logical_bytes"],
            "wire_bytes": [row["wire_bytes"] for row in last],
            "median_time_s": statistics.median(
                max(row["time_s"] for row in event["ranks"]) for event in events
            ),
            # The loss of the global batch: every rank's batch has the same size.
            "losses": [statistics.fmean(row["loss"] for row in e["ranks"]) for e in events],
            "cuda": [row["cuda"] for row in last],
            "peak": [row["peak"] for row in last],
            "buckets": [row["buckets"] for row in last],
        }
    return {
        "world_size": world_size,
        "strategies": strategies,
        "correct": all(event["correct"] for event in measurements),
    }
