r"""Parallel-layout planner: every valid dp x tp x pp x cp x ep layout of a model on a cluster,
its memory per GPU, its step time term by term, and why the others were never considered.

Nothing here is a new formula. Each number comes from the calculator that owns it:

- memory per GPU: app.calc.training.training_memory (the most loaded, first pipeline stage).
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
  c1, c2 from two calls per degree split and the DP's c0, c1 from two per ZeRO group and
  stage, and the tests check them against direct calls.
- pipeline bubble: app.calc.pipeline.closed_form, linear in (t_f, t_b, t_w) for a schedule,
  p and v, so it is read once per (schedule, p, v).

Placement. Ranks are numbered tp fastest, then cp, then ep, then dp, then pp slowest:
Megatron-Core's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py,
initialize_model_parallel). Expert parallelism is carved out of the dp x cp ranks (ep must
divide dp * cp; Megatron's expert rank generator folds cp into the expert data-parallel
group), so world = dp * tp * pp * cp. A group of size g whose stride is s (s = tp for cp and
ep, tp * cp for dp, tp * cp * dp for pp) stays inside a node when s * g divides the GPUs per
node; otherwise its ring crosses the network and runs at the inter-node link's speed.

Step time (one optimizer step, m micro-batches of b sequences per pipeline):

    step = m (compute + recompute) + m exposed_tp + m exposed_cp_ep + exposed_pp
           + exposed_dp + bubble

- compute runs at peak x matmul_efficiency. The default efficiency is the measured Maximum
  Achievable Matmul FLOPS of the accelerator (stas00/ml-engineering, compute/accelerator
  README, "Maximum Achievable Matmul FLOPS comparison table": A100 SXM 267.9 of 312 TFLOPS =
  85.9%, H100 SXM 792.1 of 989 = 80.1%, BF16, CUDA 12.1); 80% where none is measured. It is
  an upper bound: real layers also run norms, softmax and optimizer steps, so the planner's
  MFU is above what published runs reach (tests/calc/test_planner_published.py).
- TP collectives sit on the critical path (Megatron's f/g operators, arXiv:1909.08053):
  all exposed. EP all-to-alls are exposed too (no DualPipe-style overlap).
- CP ring passes overlap the attention-core compute of the same layer (Megatron-Core
  context_parallel.rst; Liu et al. arXiv:2310.01889): exposed = max(0, comm - attention).
- DP: collectives run once per step (gradient reduce, ZeRO-1 / distributed-optimizer
  gather) hide behind one micro-batch's compute (Megatron --overlap-grad-reduce and
  --overlap-param-gather); those run every micro-batch (ZeRO-2 reduce-scatter, ZeRO-3
  gathers) hide behind each micro-batch's compute; only the excess is exposed.
- PP sends are exposed, v times as many with interleaving (Narayanan et al. Section 2.2.2).
- bubble: the schedule's closed form with t_f = forward, t_b = forward + recompute,
  t_w = forward (Qi et al. arXiv:2401.10241 take T_F = T_B = T_W), each micro-batch's
  exposed TP/CP/EP time split between forward and backward.

Stages are taken as equal: ceil(L/p) layers and 1/p of the output layer each (the real last
stage holds the whole output layer; Llama 3 moves a layer off the first and last stages).
Recomputation's repeated TP collectives are not counted (comm_volume leaves them out).
"""

from app.calc.planner.costs import evaluate, placement, training_setup
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
from app.calc.planner.search import plan, why_not

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
    "evaluate",
    "placement",
    "plan",
    "plan_request",
    "resolve_model",
    "training_setup",
    "violations",
    "why_not",
]
