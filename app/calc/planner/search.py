"""The search: every candidate layout, the rules that cut it, the ranking and the Pareto front.

The degree splits are walked one by one; the knobs of the splits that differ only in ep (ZeRO
option, micro-batch, schedule, recompute) are costed together, as numpy arrays, by
step_formulas.step_numbers: the same operations in the same order as one layout's cost, so
every float is the one Costs.cost gives that layout, to the last bit.

One module because it is one algorithm: the walk over degree splits (_plan), the blocks of
knobs it costs at once (_Block) and the running state (_Search) only make sense together. The
ranking is app.calc.planner.ranking, the step formulas app.calc.planner.step_formulas.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice

import numpy as np

from app.calc.messages import N_, Message
from app.calc.planner.costs import Costs
from app.calc.planner.ranking import _fastest, _pareto, rounded_to_us
from app.calc.planner.request import (
    ZERO_OPTIONS,
    Layout,
    PlanRequest,
    check_request,
)
from app.calc.planner.results import LayoutCost, Plan, Rejected, RejectionGroup
from app.calc.planner.rules import RULES, Degrees, degree_rules, knob_rules
from app.calc.planner.step_formulas import (
    PER_MICRO_BATCH,
    bubble_coefficients,
    in_flight,
    stage_work,
    step_numbers,
)

EXAMPLES_PER_RULE = 3

# knob_rules checks these first, and from the ZeRO option and dp * cp alone: one of them cuts
# every micro-batch and schedule of a split's ZeRO option.
ZERO_RULES = ("not_offered", "zero_or_distributed_optimizer", "zero_needs_dp")

Problem = tuple[str, Message]
Example = tuple[Callable[[], Layout], Message]
Found = tuple[np.ndarray, np.ndarray, np.ndarray]  # step times, memories, flat indices

# A block's axes (_Block): flattened, they run in search order.
SPLIT, ZERO, MICRO_BATCH, SCHEDULE, RECOMPUTE = range(5)


def _along(values: object, *axes: int) -> np.ndarray:
    """`values` laid along `axes` of a block, every other axis of length 1 to broadcast."""
    array = np.asarray(values)
    shape = [1] * 5
    for axis, size in zip(axes, array.shape, strict=True):
        shape[axis] = size
    return array.reshape(shape)


def _sequence_parallel(d: Degrees) -> bool | None:
    """A Layout's sequence_parallel for split `d`: None (SP exactly when tp > 1) unless the
    request's framework has no SP."""
    return None if d.sp == (d.tp > 1) else d.sp


def _divisors(n: int) -> list[int]:
    """Ascending; pairs up to sqrt(n), since a replica may hold 2**20 sequences or more."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


class _Rejections:
    """Counts per rule and the first few rejected layouts of each."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[Rejected]] = {}

    def add(self, layout: Callable[[], Layout], rule: str, reason: Message, count: int = 1) -> None:
        self.add_all(rule, count, iter([(layout, reason)]))

    def add_all(self, rule: str, count: int, examples: Iterator[Example]) -> None:
        """`count` candidates cut by `rule`; `examples` (in search order) read only as far as
        the rule still keeps examples."""
        self.counts[rule] = self.counts.get(rule, 0) + count
        kept = self.examples.setdefault(rule, [])
        for layout, reason in islice(examples, EXAMPLES_PER_RULE - len(kept)):
            kept.append(Rejected(layout(), rule, reason))

    def groups(self) -> tuple[RejectionGroup, ...]:
        order = sorted(self.counts, key=lambda r: (-self.counts[r], r))
        return tuple(
            RejectionGroup(r, RULES[r], self.counts[r], tuple(self.examples[r])) for r in order
        )


def _schedules(req: PlanRequest, pp: int) -> list[tuple[str, int]]:
    """(schedule, v) pairs to try: v only where pp * v can split the layers."""
    if pp == 1:
        return [("1f1b", 1)]
    found = []
    layers = req.model.layers
    for schedule in req.schedules:
        if schedule != "interleaved":
            found.append((schedule, 1))
            continue
        for v in range(2, req.max_virtual_stages + 1):
            if pp * v <= layers and (req.uneven_pipeline or layers % (pp * v) == 0):
                found.append((schedule, v))
    return found


def knob_problem(req: PlanRequest, lay: Layout) -> Problem | None:
    """The first rule about ZeRO, micro-batch or schedule that cuts `lay` in the search."""
    problem = next(knob_rules(req, lay), None)
    if problem is None and lay.schedule == "gpipe":
        problem = ("gpipe_dominated", Message(N_("1F1B has the same bubble")))
    return problem


@dataclass(frozen=True)
class _Verdicts:
    """knob_problem of each (micro-batch, schedule) of one ZeRO option."""

    problems: list[list[Problem | None]]
    passed: np.ndarray  # bool, (micro-batch, schedule)
    cut: dict[str, int]  # rule -> (micro-batch, schedule) pairs it cuts

    @classmethod
    def of(cls, problems: list[list[Problem | None]]) -> _Verdicts:
        cut: dict[str, int] = {}
        for row in problems:
            for problem in row:
                if problem:
                    cut[problem[0]] = cut.get(problem[0], 0) + 1
        passed = np.array([[problem is None for problem in row] for row in problems], bool)
        return cls(problems, passed, cut)


@dataclass(frozen=True)
class _Block:
    """Every candidate of valid degree splits that differ only in ep, on the axes (split,
    ZeRO option, micro-batch, schedule, recompute): in search order when flattened."""

    req: PlanRequest
    splits: list[Degrees]
    micro_batches: list[int]
    schedules: list[tuple[str, int]]
    verdicts: list[_Verdicts]  # per ZeRO option, the same for every split

    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        return (len(self.splits), len(ZERO_OPTIONS), len(self.micro_batches),
                len(self.schedules), len(self.req.recompute_modes))  # fmt: skip

    def layout(self, e: int, z: int, bi: int, si: int, recompute: str) -> Layout:
        d, (zero, dist), (schedule, v) = self.splits[e], ZERO_OPTIONS[z], self.schedules[si]
        return Layout(d.dp, d.tp, d.pp, d.cp, d.ep, zero, dist, recompute,
                      self.micro_batches[bi], schedule, v, _sequence_parallel(d))  # fmt: skip

    def candidate(self, flat: int) -> Layout:
        e, z, bi, si, ri = (int(i) for i in np.unravel_index(flat, self.shape))
        return self.layout(e, z, bi, si, self.req.recompute_modes[ri])

    def cut_by(self, rule: str) -> Iterator[Example]:
        """What knob_problem cuts by `rule`, as it was asked: with recompute "none"."""
        for e in range(len(self.splits)):
            for z, verdicts in enumerate(self.verdicts):
                if rule not in verdicts.cut:
                    continue
                for bi, row in enumerate(verdicts.problems):
                    for si, problem in enumerate(row):
                        if problem and problem[0] == rule:
                            lay = self.layout(e, z, bi, si, "none")
                            yield (lambda lay=lay: lay), problem[1]

    def passing(self, recompute: str, reason: Message) -> Iterator[Example]:
        """Every candidate past the knob rules, with `recompute`."""
        for e in range(len(self.splits)):
            for z, verdicts in enumerate(self.verdicts):
                for bi, si in np.argwhere(verdicts.passed):
                    lay = self.layout(e, z, int(bi), int(si), recompute)
                    yield (lambda lay=lay: lay), reason

    def too_big(self, oom: np.ndarray, memory: np.ndarray) -> Iterator[Example]:
        has = self.req.cluster.gpu_memory_bytes
        for flat in np.flatnonzero(oom):
            need = float(memory.flat[flat])
            reason = Message(
                N_("needs %(need)s GB per GPU, has %(has)s GB"),
                need=f"{need / 1e9:.1f}",
                has=f"{has / 1e9:.1f}",
            )
            yield (lambda flat=flat: self.candidate(int(flat))), reason


def plan(request: PlanRequest) -> Plan:
    """Every candidate layout of the request: ranked, the Pareto front, and the rejected.

    Candidates: every (tp, pp, cp) dividing the GPUs with dp the rest, every ep dividing
    both dp * cp and the experts (MoE only), the ZeRO options (0-3 and Megatron's
    distributed optimizer), the recompute modes, each micro-batch dividing a replica's
    sequences up to max_micro_batch, and the schedules (interleaved with each
    v = 2..max_virtual_stages that splits the layers). A rule that cuts a degree split
    counts once in Plan.rejected, whatever it would have expanded to; a rule that cuts a
    (ZeRO, b, schedule) counts once per recompute mode.
    """
    check_request(request)
    with _without_cycle_collection():
        return _plan(request)


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Pause Python's cyclic garbage collector. A large search makes about a million small
    objects, none in a reference cycle (reference counting frees them all), and keeps tens
    of thousands in its caches, which every full collection walks: a tenth of DeepSeek-V3's
    search time. Only the caller that found the collector on turns it back on, so nested or
    concurrent searches leave it as they found it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _plan(req: PlanRequest) -> Plan:
    n = req.cluster.gpus
    search = _Search(req)
    moe, experts = req.model.experts > 1, req.model.experts
    for tp in _divisors(n):
        for pp in _divisors(n // tp):
            for cp in _divisors(n // (tp * pp)):
                dp = n // (tp * pp * cp)
                splits = []
                for ep in _divisors(math.gcd(dp * cp, experts)) if moe else [1]:
                    d = Degrees(dp, tp, pp, cp, ep, tp > 1 and req.sequence_parallel)
                    problem = next(degree_rules(req, d), None)
                    if problem:
                        search.enumerated += 1
                        search.rejections.add(
                            lambda d=d: Layout(d.dp, d.tp, d.pp, d.cp, d.ep), *problem
                        )
                        continue
                    splits.append(d)
                if splits:
                    search.search(splits)
    return search.plan()


class _Search:
    """The search's running state: counts, rejections and every fitting layout so far."""

    def __init__(self, req: PlanRequest) -> None:
        self.req = req
        self.costs = Costs(req)
        self.rejections = _Rejections()
        self.enumerated = 0
        self.valid = 0
        self.verdicts: dict[tuple[int, int, int], _Verdicts] = {}
        # FlashAttention cuts selective recompute: the same activations, more FLOPs.
        self.modes_ok = np.array(
            [not (r == "selective" and req.flash_attention) for r in req.recompute_modes], bool
        )
        # blocks with candidates past every rule, and which (ZeRO, b, schedule) those are
        self.blocks: list[tuple[_Block, np.ndarray]] = []

    def verdicts_of(
        self, d: Degrees, micro_batches: list[int], schedules: list[tuple[str, int]]
    ) -> list[_Verdicts]:
        """knob_problem's verdicts on split `d`, per ZeRO option. Past the ZeRO rules,
        knob_rules reads dp (the replica's sequences), the micro-batch, the schedule and pp
        only (and tp where the fused softmax is required): one table per (dp, pp) serves every
        tp, cp and ep."""
        req = self.req
        key = (d.dp, d.pp, d.tp if req.fused_softmax_required else 0)
        if key not in self.verdicts:
            self.verdicts[key] = _Verdicts.of(
                [
                    [knob_problem(req, Layout(d.dp, d.tp, d.pp, d.cp, d.ep, micro_batch=b,
                                              schedule=schedule, virtual_stages=v))
                     for schedule, v in schedules]
                    for b in micro_batches
                ]
            )  # fmt: skip
        rest = self.verdicts[key]
        found = []
        b, (schedule, v) = micro_batches[0], schedules[0]
        for zero, dist in ZERO_OPTIONS:
            lay = Layout(d.dp, d.tp, d.pp, d.cp, d.ep, zero, dist, "none", b, schedule, v)
            problem = knob_problem(req, lay) if zero or dist else None
            if problem and problem[0] in ZERO_RULES:
                found.append(_Verdicts.of([[problem] * len(schedules)] * len(micro_batches)))
            else:
                found.append(rest)
        return found

    def search(self, splits: list[Degrees]) -> None:
        """Every knob combination of valid degree splits that differ only in ep."""
        req, d = self.req, splits[0]
        per_replica = req.global_batch_sequences // d.dp
        micro_batches = [b for b in _divisors(per_replica) if b <= req.max_micro_batch]
        schedules = _schedules(req, d.pp)
        if not schedules:
            return
        block = _Block(req, splits, micro_batches, schedules,
                       self.verdicts_of(d, micro_batches, schedules))  # fmt: skip
        n_e, _, _, _, n_r = block.shape
        self.enumerated += math.prod(block.shape)
        cut: dict[str, int] = {}
        for verdicts in block.verdicts:
            for rule, pairs in verdicts.cut.items():
                cut[rule] = cut.get(rule, 0) + pairs
        for rule, pairs in cut.items():
            self.rejections.add_all(rule, n_e * pairs * n_r, block.cut_by(rule))
        passed = np.array([verdicts.passed for verdicts in block.verdicts])
        combos = int(passed.sum())
        modes = int(self.modes_ok.sum())
        if combos and modes < n_r:
            self.rejections.add_all(
                "selective_same_as_none",
                n_e * combos * (n_r - modes),
                block.passing("selective", Message(N_("FlashAttention is on"))),
            )
        self.valid += n_e * combos * modes
        if combos and modes:
            self.blocks.append((block, passed))

    def fitting(self, block: _Block, passed: np.ndarray) -> Found:
        """The step times, memories and flat indices of the candidates of `block` that pass
        every rule and fit; the others are counted as out of memory."""
        time_s, memory = self.cost(block, passed)
        ok = np.broadcast_to(passed[None, :, :, :, None] & self.modes_ok, block.shape)
        oom = ok & (memory > self.req.cluster.gpu_memory_bytes)
        too_big = int(oom.sum())
        if too_big:
            self.rejections.add_all("out_of_memory", too_big, block.too_big(oom, memory))
        fits = np.flatnonzero(ok & ~oom)
        return time_s.flat[fits], memory.flat[fits], fits

    def cost(self, block: _Block, passed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step time and memory of every candidate of `block`, on its axes (NaN where a rule
        cuts a whole ZeRO option): Costs.numbers with each input along its own axes."""
        costs, d, prof = self.costs, block.splits[0], self.req.profile
        modes = self.req.recompute_modes
        grids = [costs.grid(split) for split in block.splits]
        zero = np.full((len(block.splits), len(ZERO_OPTIONS), 6), np.nan)
        for z, (stage, dist) in enumerate(ZERO_OPTIONS):
            if passed[z].any():
                zero[:, z] = [costs.zero_terms(split, stage, dist) for split in block.splits]
        per_replica = self.req.global_batch_sequences // d.dp
        b = _along(block.micro_batches, MICRO_BATCH)
        # Every split's pass tables, for every micro-batch: (split, micro-batch, pass, column)
        tables = np.array(
            [[costs.pass_table(g.degrees, mb) for mb in block.micro_batches] for g in grids]
        )
        layers, head, embedding = (
            np.array([[getattr(g.split, name)] for g in grids], float)
            for name in ("layers", "head", "embedding")
        )
        work = [
            _along(x, SPLIT, MICRO_BATCH)
            for x in stage_work(tables, layers, head, embedding, costs.hw.kernel_s,
                                prof.microbatch_overhead_s)
        ]  # fmt: skip
        compute_s, memory_s, fixed_s, attention_s, selective_s, full_s = work
        by_mode = {"none": 0.0 * compute_s, "selective": selective_s, "full": full_s}
        recompute_s = np.concatenate(
            [np.broadcast_to(by_mode[r], compute_s.shape) for r in modes], axis=RECOMPUTE
        )

        bubble = np.array([bubble_coefficients(s, d.pp, v) for s, v in block.schedules])
        *terms, _, _, _, memory = step_numbers(
            compute_s=compute_s,
            memory_s=memory_s,
            fixed_s=fixed_s,
            recompute_s=recompute_s,
            attention_s=attention_s,
            latency=[_along([g.per_mb_latency[k] for g in grids], SPLIT) for k in PER_MICRO_BATCH],
            per_seq=[_along([g.per_mb_per_seq[k] for g in grids], SPLIT) for k in PER_MICRO_BATCH],
            comm_scale=_along([g.comm_scale for g in grids], SPLIT),
            dp_step_s=_along(zero[:, :, 2], SPLIT, ZERO),
            dp_mb_s=_along(zero[:, :, 3], SPLIT, ZERO),
            dp_tail_s=_along(zero[:, :, 5], SPLIT, ZERO),
            optimizer_s=_along(zero[:, :, 4], SPLIT, ZERO),
            activation_unit=_along(
                [[g.activation_unit[r] for r in modes] for g in grids], SPLIT, RECOMPUTE
            ),
            last_stage_unit=_along(
                [[g.last_stage_unit[r] for r in modes] for g in grids], SPLIT, RECOMPUTE
            ),
            loss_unit=_along([g.loss_unit for g in grids], SPLIT),
            fixed_bytes=_along(zero[:, :, 0] + zero[:, :, 1], SPLIT, ZERO),
            b=b,
            m=per_replica // b,
            bubble=tuple(_along(coefficient, SCHEDULE) for coefficient in bubble.T),
            hops=_along([v if s == "interleaved" else 1 for s, v in block.schedules], SCHEDULE),
            flight=_along(
                [
                    [in_flight(s, d.pp, per_replica // mb, v) for s, v in block.schedules]
                    for mb in block.micro_batches
                ],
                MICRO_BATCH,
                SCHEDULE,
            ),
            overlap_slowdown=prof.overlap_slowdown,
            dp_overlap=prof.dp_overlap,
            step_overhead_s=prof.step_overhead_s,
            allocator_fraction=prof.allocator_fraction,
        )
        # sum() of the terms, in their order, as StepTime.total adds them
        time_s = 0.0 + terms[0]
        for term in terms[1:]:
            time_s = time_s + term
        return np.broadcast_to(time_s, block.shape), np.broadcast_to(memory, block.shape)

    def plan(self) -> Plan:
        req = self.req
        # Every grid first: their calls leave DP times that zero_terms would call for.
        for block, _ in self.blocks:
            for d in block.splits:
                self.costs.grid(d)
        found = [self.fitting(block, passed) for block, passed in self.blocks]
        time_s = np.concatenate([f[0] for f in found] + [np.empty(0)])
        memory = np.concatenate([f[1] for f in found] + [np.empty(0)])
        rounded = rounded_to_us(time_s)
        block_of = np.repeat(np.arange(len(found)), [len(f[2]) for f in found])
        flat_of = np.concatenate([f[2] for f in found] + [np.empty(0, int)])

        def cost_of(i: int) -> LayoutCost:
            lay = self.blocks[int(block_of[i])][0].candidate(int(flat_of[i]))
            return self.costs.cost(lay)

        return Plan(
            request=req,
            ranked=tuple(cost_of(i) for i in _fastest(rounded, memory, req.top)),
            pareto=tuple(cost_of(i) for i in _pareto(rounded, memory)),
            rejected=self.rejections.groups(),
            enumerated=self.enumerated,
            valid=self.valid,
            feasible=len(rounded),
            step_times_s=tuple(np.sort(rounded).tolist()),
        )
