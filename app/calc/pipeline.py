"""Pipeline-parallel schedules, simulated action by action: GPipe, 1F1B, interleaved 1F1B, ZB-H1.

One module because the simulation and the published closed forms it must reproduce share one
setup and its checks (schedule_problems), and app/calculators and app/quiz import both from
here.

Each of p stages (GPUs) runs its schedule's ordered list of actions on micro-batches:

- F: the forward of one micro-batch through the stage (or through one of its v model chunks),
  taking t_f (t_f / v for a chunk).
- B: the input-gradient half of the backward, t_b. W: the weight-gradient half, t_w. Qi et
  al., "Zero Bubble Pipeline Parallelism" (ICLR 2024, arXiv:2401.10241), Section 2, split the
  backward this way because B on a stage needs only B of the next stage, while W can wait.
- BW: the whole backward, t_b + t_w, as GPipe, 1F1B and interleaved 1F1B run it.

An action starts when its stage is free and what it depends on has finished (plus the
send/recv time t_p2p when that ran on another stage): F needs the previous (virtual) stage's F
of the same micro-batch; B or BW needs the next stage's B or BW of that micro-batch (the last
stage: its own F, where the loss is); W needs its own B. Times are in whatever unit t_f is
given in. With every stage doing the same work and t_p2p = 0 the simulation reproduces the
published closed forms exactly (tests/calc/test_pipeline.py):

- GPipe (Huang et al., arXiv:1811.06965) and 1F1B (PipeDream-Flush; Narayanan et al.,
  "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21,
  arXiv:2104.04473, Section 2.2.1): bubble time t_pb = (p - 1)(t_f + t_b), so
  t_pb / t_id = (p - 1) / m.
- Interleaved 1F1B with v chunks per stage (same paper, Section 2.2.2): t_pb = (p - 1)(t_f +
  t_b) / v, so t_pb / t_id = (p - 1) / (v m).
- ZB-H1 (Qi et al., Section 2.1, Figure 3): bubble (p - 1)(T_F + T_B - T_W), a third of 1F1B's
  when T_F = T_B = T_W. The simulation gives exactly that while T_W <= min(T_F, T_B) and
  m >= p; past that a held-back W no longer fits the wait it fills, and the simulated bubble
  is (p - 1) max(T_F + T_B - T_W, T_F, T_B) (m >= p), which the page shows beside the formula.

Here t_b in the first two papers is the whole backward, t_b + t_w in this module's terms.

Stages need not be equal: `stage_scale` multiplies every action of stage i by its own factor
(more layers, or the LM head and loss on the last stage: Llama 3, arXiv:2407.21783, Section
3.3.2). The closed forms above assume equal stages; with no send/receive time, GPipe's step
is then sum_i(s_i) + (m - 1) max_i(s_i) times t_f + t_b + t_w (imbalanced_step), one
micro-batch's trip through every stage and m - 1 more at the slowest stage's pace, and so is
1F1B's when its last stage is the slowest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from app.calc.messages import N_, Message

Schedule = Literal["gpipe", "1f1b", "interleaved", "zb-h1"]
Kind = Literal["F", "B", "W", "BW"]
InterleavedOrder = Literal["megatron", "torch"]

SCHEDULES: tuple[Schedule, ...] = ("gpipe", "1f1b", "interleaved", "zb-h1")
SCHEDULE_NAMES: dict[str, str] = {
    "gpipe": "GPipe (all forward, all backward)",
    "1f1b": "1F1B (PipeDream-Flush)",
    "interleaved": "Interleaved 1F1B",
    "zb-h1": "Zero bubble ZB-H1",
}


@dataclass(frozen=True)
class PipelineSetup:
    """One simulation's inputs. Stage times are per micro-batch through a whole stage."""

    schedule: Schedule
    stages: int  # p
    microbatches: int  # m
    chunks: int = 1  # v, model chunks per stage; used by the interleaved schedule only
    t_f: float = 1.0  # forward
    t_b: float = 1.0  # input gradient (B)
    t_w: float = 1.0  # weight gradient (W)
    t_p2p: float = 0.0  # send/recv between two stages
    # Each stage's time relative to t_f, t_b, t_w (one factor per stage); empty: all equal.
    stage_scale: tuple[float, ...] = ()
    # Whose interleaved 1F1B order: Megatron-LM's, the papers' and the default, or that of
    # torch.distributed.pipelining's ScheduleInterleaved1F1B, which the demo runs. They differ
    # only at m = p (see _interleaved).
    interleaved_order: InterleavedOrder = "megatron"

    @property
    def virtual_chunks(self) -> int:
        """Model chunks per stage this schedule actually uses."""
        return self.chunks if self.schedule == "interleaved" else 1

    @property
    def scales(self) -> tuple[float, ...]:
        """Each stage's time factor: `stage_scale`, or 1 for every stage."""
        return self.stage_scale or (1.0,) * self.stages

    @property
    def balanced(self) -> bool:
        """Whether every stage does the same work, as the closed forms assume."""
        return len(set(self.scales)) <= 1


@dataclass(frozen=True)
class Action:
    kind: Kind
    microbatch: int
    chunk: int = 0


@dataclass(frozen=True)
class Block:
    """One action as it ran: on which stage, when."""

    stage: int
    kind: Kind
    microbatch: int
    chunk: int
    start: float
    end: float


@dataclass(frozen=True)
class Simulation:
    setup: PipelineSetup
    timeline: list[list[Block]]  # per stage, in the order it ran
    total_time: float  # first start (0) to last end
    busy_time: float  # summed over stages
    idle_time: float  # p * total_time - busy_time
    peak_in_flight: list[float]  # per stage, in micro-batches through the whole stage

    @property
    def bubble_fraction_of_total(self) -> float:
        """Idle share of all stage-time: idle / (p * total)."""
        return self.idle_time / (self.setup.stages * self.total_time)

    @property
    def bubble_over_ideal(self) -> float:
        """Idle relative to the work itself: idle / busy = t_pb / t_id (Narayanan Sec. 2.2)."""
        return self.idle_time / self.busy_time


def schedule_problems(setup: PipelineSetup) -> list[Message]:
    """What makes a set-up impossible to schedule, in words; empty when it can run."""
    problems = []
    if setup.schedule not in SCHEDULES:
        template = N_("schedule must be one of %(schedules)s")
        problems.append(Message(template, schedules=", ".join(SCHEDULES)))
    if setup.stages < 1 or setup.microbatches < 1:
        problems.append(Message(N_("pipeline stages and micro-batches must be at least 1")))
    if not (setup.t_f > 0 and setup.t_b > 0 and setup.t_w >= 0 and setup.t_p2p >= 0):
        problems.append(Message(N_("t_f and t_b must be positive, t_w and t_p2p not negative")))
    if setup.stage_scale and len(setup.stage_scale) != setup.stages:
        template = N_(
            "give one relative stage time per stage: %(given)s given for %(stages)s stages"
        )
        problems.append(Message(template, given=len(setup.stage_scale), stages=setup.stages))
    if any(not scale > 0 for scale in setup.stage_scale):
        problems.append(Message(N_("relative stage times must be positive")))
    if setup.schedule == "interleaved":
        if setup.stages < 2:
            template = N_("the interleaved schedule needs at least 2 pipeline stages")
            problems.append(Message(template))
        if setup.chunks < 2:
            template = N_("the interleaved schedule needs at least 2 model chunks per stage")
            problems.append(Message(template))
        if setup.stages >= 1 and setup.microbatches % setup.stages:
            # Megatron-LM's interleaved schedule runs micro-batches in groups of p.
            template = N_(
                "the interleaved schedule needs micro-batches to be a multiple of the stages"
            )
            problems.append(Message(template))
    return problems


def _gpipe(p: int, m: int, stage: int) -> list[Action]:
    # Huang et al., Figure 2(c); Narayanan et al., Figure 3: every forward, then every backward.
    return [Action("F", i) for i in range(m)] + [Action("BW", i) for i in range(m)]


def _one_f_one_b(p: int, m: int, stage: int) -> list[Action]:
    # Narayanan et al., Section 2.2.1 and Figure 4 (top); Megatron-LM's schedules.py
    # forward_backward_pipelining_without_interleaving: p - stage - 1 warm-up forwards, then
    # one forward and one backward in turn, then the remaining backwards.
    warmup = min(p - stage - 1, m)
    order = [Action("F", i) for i in range(warmup)]
    for i in range(m - warmup):
        order += [Action("F", warmup + i), Action("BW", i)]
    return order + [Action("BW", i) for i in range(m - warmup, m)]


def _interleaved(p: int, m: int, stage: int, v: int, rule: InterleavedOrder) -> list[Action]:
    # Narayanan et al., Section 2.2.2 and Figure 4 (bottom), in the order Megatron-LM's
    # forward_backward_pipelining_with_interleaving runs it: the k-th chunk-forward is
    # micro-batch (k // (p v)) p + k % p on chunk (k % (p v)) // p; backwards run the chunks
    # in reverse. Warm-up: 2(p - stage - 1) + (v - 1) p chunk-forwards, or all of them when
    # m = p.
    #
    # torch 2.13's ScheduleInterleaved1F1B has no m = p exception: its warm-up is always
    # min((v - 1) r + 2(p - 1 - stage), m v) with r = p micro-batches per round whenever p
    # divides m (torch/distributed/pipelining/schedules.py:2872-2888, _get_warmup_ops, and
    # :2935-2936 for r). So at m = p the stages from p/2 on start 1F1B before their last
    # forward; every other set-up, and every stage below p/2, runs the same order either way.
    total = m * v

    def action(kind: Kind, k: int) -> Action:
        chunk = (k % (p * v)) // p
        if kind == "BW":
            chunk = v - 1 - chunk
        return Action(kind, (k // (p * v)) * p + k % p, chunk)

    all_forward_first = m == p and rule == "megatron"
    warmup = total if all_forward_first else min(2 * (p - stage - 1) + (v - 1) * p, total)
    order = [action("F", k) for k in range(warmup)]
    for k in range(total - warmup):
        order += [action("F", warmup + k), action("BW", k)]
    return order + [action("BW", k) for k in range(total - warmup, total)]


def _zb_h1(p: int, m: int, stage: int) -> list[Action]:
    # Qi et al., Section 2.1 and Figure 3 (ZB-H1): 1F1B's forwards and input-gradient
    # backwards, each B as soon as 1F1B would run its backward so the stage above gets its
    # gradient early; stage i holds back its first i weight gradients, so each W runs i
    # places after its B and the last i fill the drain at the end, where 1F1B idles. Stage i
    # then keeps (p - i) + i = p micro-batches of activations at its peak: 1F1B's first stage,
    # "the same peak memory as 1F1B".
    warmup = min(p - stage - 1, m)
    order = [Action("F", i) for i in range(warmup)]
    w_next = 0
    for i in range(m):
        if i < m - warmup:
            order.append(Action("F", warmup + i))
        order.append(Action("B", i))
        if i + 1 - w_next > stage:
            order.append(Action("W", w_next))
            w_next += 1
    return order + [Action("W", i) for i in range(w_next, m)]


def stage_orders(setup: PipelineSetup) -> list[list[Action]]:
    """Each stage's ordered list of actions under the set-up's schedule."""
    problems = schedule_problems(setup)
    if problems:
        raise ValueError(Message.join("; ", problems))
    p, m = setup.stages, setup.microbatches
    if setup.schedule == "gpipe":
        return [_gpipe(p, m, s) for s in range(p)]
    if setup.schedule == "1f1b":
        return [_one_f_one_b(p, m, s) for s in range(p)]
    if setup.schedule == "interleaved":
        return [_interleaved(p, m, s, setup.chunks, setup.interleaved_order) for s in range(p)]
    return [_zb_h1(p, m, s) for s in range(p)]


def _duration(setup: PipelineSetup, kind: Kind, stage: int) -> float:
    base = {
        "F": setup.t_f,
        "B": setup.t_b,
        "W": setup.t_w,
        "BW": setup.t_b + setup.t_w,
    }[kind]
    return setup.scales[stage] * base / setup.virtual_chunks


def simulate(setup: PipelineSetup) -> Simulation:
    """Runs every stage's actions in order, each as early as its stage and inputs allow."""
    orders = stage_orders(setup)
    p, v = setup.stages, setup.virtual_chunks
    last_virtual = p * v - 1
    ends: dict[tuple[str, int, int], float] = {}  # (kind, micro-batch, virtual stage) -> end

    def ready_at(action: Action, stage: int) -> float | None:
        """When the action's input is there; None while it is not yet computed."""
        j = action.chunk * p + stage  # Megatron places chunk c of stage s at c p + s
        if action.kind == "F":
            if j == 0:
                return 0.0
            key, hop = ("F", action.microbatch, j - 1), setup.t_p2p
        elif action.kind == "W":
            key, hop = ("B", action.microbatch, j), 0.0
        elif j == last_virtual:
            key, hop = ("F", action.microbatch, j), 0.0
        else:
            key, hop = (action.kind, action.microbatch, j + 1), setup.t_p2p
        end = ends.get(key)
        return None if end is None else end + hop

    timeline: list[list[Block]] = [[] for _ in range(p)]
    free = [0.0] * p
    position = [0] * p
    remaining = sum(len(order) for order in orders)
    while remaining:
        progressed = False
        for stage in range(p):
            order = orders[stage]
            while position[stage] < len(order):
                action = order[position[stage]]
                ready = ready_at(action, stage)
                if ready is None:
                    break
                start = max(free[stage], ready)
                end = start + _duration(setup, action.kind, stage)
                free[stage] = end
                ends[(action.kind, action.microbatch, action.chunk * p + stage)] = end
                timeline[stage].append(
                    Block(stage, action.kind, action.microbatch, action.chunk, start, end)
                )
                position[stage] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            template = N_("the %(schedule)s schedule deadlocks for this set-up")
            raise ValueError(Message(template, schedule=setup.schedule))

    return timeline_summary(setup, timeline)


def timeline_summary(setup: PipelineSetup, timeline: list[list[Block]]) -> Simulation:
    """Step time, busy and idle time and peak in-flight micro-batches of a per-stage timeline.

    The simulator's own timeline, or one measured on real ranks (times from any common
    clock): the step runs from the earliest start to the latest end over all stages, and the
    idle time is p times that minus the time spent in actions, as Narayanan et al. (SC'21,
    Section 2.2) count the bubble. The measured timeline is shifted so the step starts at 0.
    """
    blocks = [b for row in timeline for b in row]
    origin = min((b.start for b in blocks), default=0.0)
    shifted = [
        [replace(b, start=b.start - origin, end=b.end - origin) for b in row] for row in timeline
    ]
    total = max((b.end - origin for b in blocks), default=0.0)
    busy = sum(b.end - b.start for b in blocks)
    return Simulation(
        setup=setup,
        timeline=shifted,
        total_time=total,
        busy_time=busy,
        idle_time=setup.stages * total - busy,
        peak_in_flight=[peak_in_flight(row, setup) for row in shifted],
    )


def interleaved_first_stage_in_flight(stages: int, virtual_stages: int) -> float:
    """Micro-batches' worth of activations the first stage holds under interleaved 1F1B.

    p (1 + (p - 1) / (p v)): Korthikanti et al., arXiv:2205.05198, Section 4.2.3, from
    Megatron's warm-up of 2(p - 1) + (v - 1) p chunk-forwards.
    """
    p, v = stages, virtual_stages
    return p * (1 + (p - 1) / (p * v))


def peak_in_flight(row: list[Block], setup: PipelineSetup) -> float:
    """Most micro-batches whose forward has run on this stage and whose backward has not.

    Activations are kept from F until the last backward action that reads them: BW, or for
    ZB-H1 the W, which needs each layer's input (Qi et al., Section 3). A chunk holds 1/v of
    the stage's layers, so chunk-micro-batches count 1/v each.
    """
    release: Kind = "W" if setup.schedule == "zb-h1" else "BW"
    held = peak = 0
    for block in row:
        if block.kind == "F":
            held += 1
            peak = max(peak, held)
        elif block.kind == release:
            held -= 1
    return peak / setup.virtual_chunks


@dataclass(frozen=True)
class ClosedForm:
    """A schedule's published bubble, symbolic and with the set-up's numbers."""

    bubble_time: float  # t_pb
    over_ideal: float  # t_pb / t_id
    fraction_of_total: float  # t_pb / (t_id + t_pb)
    formula: str  # LaTeX
    substituted: str  # LaTeX, with the numbers
    source: str
    exact: bool  # whether the simulation matches it: no p2p time (ZB-H1: and W short enough)


def _g(x: float) -> str:
    return f"{x:.6g}"


def closed_form(setup: PipelineSetup) -> ClosedForm:
    """The published bubble of the set-up's schedule (uniform stages, no p2p time; with
    `stage_scale` it is still the equal-stage formula, and `exact` is False)."""
    problems = schedule_problems(setup)
    if problems:
        raise ValueError(Message.join("; ", problems))
    p, m, v = setup.stages, setup.microbatches, setup.virtual_chunks
    tf, tb, tw = setup.t_f, setup.t_b, setup.t_w
    ideal = m * (tf + tb + tw)
    if setup.schedule == "zb-h1":
        bubble = (p - 1) * (tf + tb - tw)
        formula = (
            r"t_{pb} = (p-1)(T_F + T_B - T_W),\quad "
            r"\frac{t_{pb}}{t_{id}} = \frac{(p-1)(T_F + T_B - T_W)}{m(T_F + T_B + T_W)}"
        )
        substituted = (
            rf"t_{{pb}} = ({p}-1)({_g(tf)} + {_g(tb)} - {_g(tw)}) = {_g(bubble)},\quad "
            rf"\frac{{t_{{pb}}}}{{t_{{id}}}} = \frac{{{_g(bubble)}}}{{{m}\cdot{_g(tf + tb + tw)}}}"
            rf" = {_g(bubble / ideal)}"
        )
        source = (
            "Qi et al., Zero Bubble Pipeline Parallelism (ICLR 2024, arXiv:2401.10241), "
            "Section 2.1 and Figure 3, ZB-H1; (p−1)/(3m) when T_F = T_B = T_W "
            "(sail-sg README table)"
        )
    elif setup.schedule == "interleaved":
        bubble = (p - 1) * (tf + tb + tw) / v
        formula = (
            r"t_{pb} = \frac{(p-1)(t_f + t_b)}{v},\quad \frac{t_{pb}}{t_{id}} = \frac{p-1}{v\,m}"
        )
        substituted = (
            rf"t_{{pb}} = \frac{{({p}-1)({_g(tf)} + {_g(tb + tw)})}}{{{v}}} = {_g(bubble)},"
            rf"\quad \frac{{t_{{pb}}}}{{t_{{id}}}} = \frac{{{p}-1}}{{{v}\cdot{m}}}"
            rf" = {_g((p - 1) / (v * m))}"
        )
        source = (
            "Narayanan et al., Megatron-LM (SC'21, arXiv:2104.04473), Section 2.2.2; "
            "t_b is the whole backward, B + W here"
        )
    else:
        bubble = (p - 1) * (tf + tb + tw)
        formula = r"t_{pb} = (p-1)(t_f + t_b),\quad \frac{t_{pb}}{t_{id}} = \frac{p-1}{m}"
        substituted = (
            rf"t_{{pb}} = ({p}-1)({_g(tf)} + {_g(tb + tw)}) = {_g(bubble)},\quad "
            rf"\frac{{t_{{pb}}}}{{t_{{id}}}} = \frac{{{p}-1}}{{{m}}} = {_g((p - 1) / m)}"
        )
        source = (
            "Narayanan et al., Megatron-LM (SC'21, arXiv:2104.04473), Section 2.2.1 "
            "(GPipe: Huang et al., arXiv:1811.06965); t_b is the whole backward, B + W here"
        )
    return ClosedForm(
        bubble_time=bubble,
        over_ideal=bubble / ideal,
        fraction_of_total=bubble / (ideal + bubble),
        formula=formula,
        substituted=substituted,
        source=source,
        exact=setup.t_p2p == 0
        and setup.balanced
        and (setup.schedule != "zb-h1" or (tw <= min(tf, tb) and m >= p)),
    )


def imbalanced_step(setup: PipelineSetup) -> float | None:
    """The step with unequal stages, (t_f + t_b + t_w)(sum s_i + (m - 1) max s_i), where it is
    exact: GPipe, and 1F1B whose last stage is (one of) the slowest, the LM-head case.

    Every micro-batch crosses every stage once, and in steady state the slowest stage admits
    one micro-batch per max_i s_i (t_f + t_b + t_w); with equal stages this is the familiar
    (m + p - 1) t. When a stage before the last is the slowest, 1F1B's warm-up forwards fill
    part of its wait and the step is shorter (the formula is then an upper bound). None there,
    for the other schedules and with send/receive time: only the simulation answers.
    """
    if setup.schedule not in ("gpipe", "1f1b") or setup.t_p2p or schedule_problems(setup):
        return None
    scales = setup.scales
    if setup.schedule == "1f1b" and scales[-1] < max(scales):
        return None
    work = setup.t_f + setup.t_b + setup.t_w
    return work * (sum(scales) + (setup.microbatches - 1) * max(scales))


def text_gantt(simulation: Simulation, width: int = 120) -> tuple[float, list[str]]:
    """A Gantt chart in plain text: (time per character, lines).

    One line per stage and kind of action (F, then B or BW, then W); a character shows the
    micro-batch, numbered from 1 as in the papers' figures (mod 10), whose action covers its
    time slot; '.' an idle slot.
    """
    shortest = min(b.end - b.start for row in simulation.timeline for b in row if b.end > b.start)
    step = max(shortest, simulation.total_time / width)
    cells = max(1, round(simulation.total_time / step))
    kinds: tuple[Kind, ...] = (
        ("F", "B", "W") if simulation.setup.schedule == "zb-h1" else ("F", "BW")
    )
    lines = []
    for stage, row in enumerate(simulation.timeline):
        for kind in kinds:
            chars = ["."] * cells
            for block in row:
                if block.kind != kind or block.end <= block.start:
                    continue
                first = round(block.start / step)
                last = max(first + 1, round(block.end / step))
                for cell in range(first, min(last, cells)):
                    chars[cell] = str((block.microbatch + 1) % 10)
            lines.append(f"stage {stage:>2} {kind:<2} |{''.join(chars)}|")
    return step, lines


@dataclass(frozen=True)
class StageMessages:
    """Point-to-point messages one stage (rank) sends and receives in one step."""

    sends: int
    recvs: int


def p2p_messages_per_stage(setup: PipelineSetup) -> list[StageMessages]:
    """Sends and receives per stage in one step, each one micro-batch's activation or gradient.

    Virtual stage j of the p v (chunk c of stage s is j = c p + s, as in Narayanan et al.,
    SC'21, Section 2.2.2) sends each micro-batch's output to j + 1 unless it is last, and the
    gradient of its input back to j - 1 unless it is first; it receives the mirror images.
    So a middle stage of GPipe or 1F1B sends 2m messages, an end stage m; interleaving
    multiplies the hops by v (the paper's "v times more communication").
    """
    p, m, v = setup.stages, setup.microbatches, setup.virtual_chunks
    last = p * v - 1
    sends, recvs = [0] * p, [0] * p
    for j in range(p * v):
        stage = j % p
        hops = (j < last) + (j > 0)
        sends[stage] += m * hops
        recvs[stage] += m * hops
    return [StageMessages(s, r) for s, r in zip(sends, recvs, strict=True)]
