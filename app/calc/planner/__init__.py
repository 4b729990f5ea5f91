r"""Parallel-layout planner: every valid dp x tp x pp x cp x ep layout of a model on a cluster,
its memory per GPU, its step time term by term, and why the others were never considered.

Each number comes from the calculator that owns it:

- memory per GPU: app.calc.training.training_memory (the first pipeline stage, which holds
  the most micro-batches in flight), with the measured terms below.
  Every term there is linear in the micro-batch b and in the micro-batches in flight, and
  nothing else in a layout changes it, so the search calls it once per (ZeRO group, ZeRO
  option) and once per (dp, tp, pp, cp, recompute) and scales the activation term (a ZeRO
  group: the dp * cp ranks sharing weights, whatever cp; activations know no ep); the tests
  check the result against a direct call for random layouts.
- FLOPs: app.calc.flops.training_flops_per_token (Narayanan et al. arXiv:2104.04473 eq. (3)
  generalised to GQA/SwiGLU/MoE weights, with the recompute's extra forward).
- communication: app.calc.comm_volume.step_calls (every collective of one step), each timed
  with app.calc.links.alpha_beta_time on the link its group runs over. A step's time per
  strategy is c0 + c1 m + c2 b m (per step, per micro-batch, per sequence); the search reads
  c1, c2 from two calls per what each strategy depends on (TP, CP and PP not on dp or ep) and
  the DP's c0, c1 from two per ZeRO group and stage, and the tests check them against direct
  calls.
- kernel times: app.calc.performance and app.calc.planner.work (below).
- pipeline bubble: app.calc.pipeline.closed_form, linear in (t_f, t_b, t_w) for a schedule,
  p and v, so it is read once per (schedule, p, v).

Placement. Ranks are numbered tp fastest, then cp, then ep, then dp, then pp slowest:
Megatron-Core's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py,
initialize_model_parallel). The MoE layers get a grid of their own over the same ranks
(Megatron-Core's "MoE parallel folding", arXiv:2504.14960): etp x ep x edp x pp, where today's
code requires only that etp * ep * pp divide the world size (parallel_state.py,
initialize_model_parallel: expert_tensor_model_pipeline_parallel_size, read at main@d98e8a64,
2026-08-22). The planner keeps the expert tensor-parallel size etp equal to tp, Megatron-Core's
default (expert_tensor_parallel_size = None -> tensor_model_parallel_size); under that
default the rule is that ep divides dp * cp, the limit the older "EP is carved out of DP"
description states. Layouts with etp < tp, which allow ep up to tp * cp * dp / etp, are legal
in Megatron-Core and not searched here (docs/architecture.md, planner/). So world =
dp * tp * pp * cp. A group of size g whose stride is s (s = tp for cp and
ep, tp * cp for dp, tp * cp * dp for pp) stays inside a node when s * g divides the GPUs per
node; otherwise its ring crosses the network and runs at the inter-node link's speed.

Step time (one optimizer step, m micro-batches of b sequences per pipeline) comes from a
performance model whose every parameter means something physical (app.calc.performance; the
request's `profile`, by default the one fitted to published runs, app/calc/profiles/):

    step = m (compute + memory_bound + recompute + fixed_mb) + m exposed_tp + m exposed_cp_ep
           + exposed_pp + exposed_dp + bubble + optimizer + fixed_step

- compute and memory_bound are one micro-batch on the slowest stage, kernel by kernel
  (app.calc.planner.work): each GEMM at its shape after the TP/CP/EP split as a roofline of
  its FLOPs at gemm_efficiency x the accelerator's measured matmul ceiling (MAMF, below) and
  its bytes at the achieved HBM bandwidth; the FlashAttention core at attention_efficiency x
  peak; norms, activations, rotary, dropout, cross-entropy and the Adam step by the bytes
  they move. The slowest stage is the last when stages are equal (it holds the output layer
  and the loss); with uneven stages allowed the layers are split so that the slowest stage is
  fastest (step_formulas.slowest_stage).
- fixed: a cost per kernel, per micro-batch and per step.
- TP collectives sit on the critical path (Megatron's f/g operators, arXiv:1909.08053):
  all exposed. EP all-to-alls are exposed too (no DualPipe-style overlap). Every link runs at
  the profile's efficiency of its datasheet bandwidth.
- CP ring passes overlap the attention-core compute of the same layer (Megatron-Core
  context_parallel.rst; Liu et al. arXiv:2310.01889); DP collectives hide behind dp_overlap of
  one micro-batch's compute (Megatron --overlap-grad-reduce and --overlap-param-gather),
  once per step (gradient reduce, ZeRO-1 / distributed-optimizer gather) or every
  micro-batch (ZeRO-2 reduce-scatter, ZeRO-3 gathers); interleaved schedules overlap their
  pipeline sends (Megatron-Core's overlap_p2p_comm), 1F1B's sit on the critical path. Each
  overlap costs overlap_slowdown of the time it overlaps: NCCL takes SMs and HBM bandwidth.
- bubble: the schedule's closed form with t_f, t_b, t_w each a third of the slowest stage's
  micro-batch (Qi et al. arXiv:2401.10241 take T_F = T_B = T_W), the recompute in t_b, the
  exposed TP/CP/EP time split between forward and backward.

MAMF: the measured Maximum Achievable Matmul FLOPS (stas00/ml-engineering, compute/accelerator
README: A100 SXM 267.9 of 312 TFLOPS = 85.9%, H100 SXM 792.1 of 989 = 80.1%, BF16, CUDA 12.1);
80% where none is measured; `matmul_efficiency` replaces it.

Memory per GPU is the peak over the first stage (app.calc.training's terms) and the last stage
holding the loss's temporaries, with NCCL's buffers per communicator and the caching
allocator's reserve (app.calc.performance). The comm volumes count recomputation's repeated TP
collectives nowhere (comm_volume leaves them out).
"""

from app.calc.planner.comm_costs import placement
from app.calc.planner.costs import evaluate
from app.calc.planner.explain import why_not
from app.calc.planner.memory_setup import training_setup
from app.calc.planner.request import (
    DEFAULT_MATMUL_EFFICIENCY,
    MAMF_EFFICIENCY,
    MAMF_SOURCE,
    PIPELINE_SCHEDULES,
    PLACEMENT_ORDER,
    PLACEMENT_SOURCE,
    RECOMPUTE,
    STEP_TERMS,
    ZERO_OPTIONS,
    Cluster,
    Layout,
    PlanRequest,
    cluster,
    mamf_efficiency,
    plan_request,
    resolve_model,
)
from app.calc.planner.results import (
    LayoutCost,
    Placement,
    Plan,
    Rejected,
    RejectionGroup,
    StepTime,
    WhyNot,
)
from app.calc.planner.rules import RULES, violations
from app.calc.planner.search import plan

__all__ = [
    "DEFAULT_MATMUL_EFFICIENCY",
    "MAMF_EFFICIENCY",
    "MAMF_SOURCE",
    "PIPELINE_SCHEDULES",
    "PLACEMENT_ORDER",
    "PLACEMENT_SOURCE",
    "RECOMPUTE",
    "RULES",
    "STEP_TERMS",
    "ZERO_OPTIONS",
    "Cluster",
    "Layout",
    "LayoutCost",
    "Placement",
    "Plan",
    "PlanRequest",
    "Rejected",
    "RejectionGroup",
    "StepTime",
    "WhyNot",
    "cluster",
    "mamf_efficiency",
    "evaluate",
    "placement",
    "plan",
    "plan_request",
    "resolve_model",
    "training_setup",
    "violations",
    "why_not",
]
