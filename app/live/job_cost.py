"""What a demo run costs the worker, in seconds: what the line in front of it charges each run
(app/live/queue.py), so that a few of the longest runs cannot fill it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

# What a run costs. Each demo was run once with every size and repeat knob at its lower bound,
# once at its spec's defaults and once at `bounds` (those knobs at their upper bounds), on 4
# gloo ranks on this project's 2-core box, busy with other jobs (load 2 to 7), on 2026-11-28.
# Measured, in seconds (smallest, defaults, bounds):
#   all_reduce 0.04, 0.29, 8.8            collectives 0.57, 2.9, 14.0
#   mixed_precision 0.11, 0.23, 1.8       tensor_parallel 0.09, 0.81, 17.3
#   pipeline_schedules 0.38, 10.7, 32.1   activation_checkpointing 0.17, 10.3, 58.6
#   zero_stages 5.7, 16.2, 71.6
# Charged: a third more, rounded up to the tenth of a second, since the finding saw
# 94 s for a run this box did in 72. The smallest job's time is the start-up every run pays;
# above it the time grows as a power of `work` (a product of the knobs the job's loops and
# tensors grow with), fitted through the defaults and the bounds. Checked against runs
# between them, measured and charged: zero_stages with 6 steps 27.4 and 26.7 s, at the
# largest model with 3 steps 56.6 and 72.3; pipeline_schedules with 12 micro-batches of
# 25 + 50 ms 16.8 and 16.4, one schedule only 3.2 and 10.4. A GPU worker is charged the same,
# which is pessimistic there.


@dataclass(frozen=True)
class DemoCost:
    at_smallest_s: float
    at_defaults_s: float
    at_bounds_s: float
    bounds: dict[str, Any]
    work: Callable[[Any], float]

    def estimate_s(self, params: BaseModel) -> float:
        spec = type(params)
        at_defaults, at_bounds = self.work(spec()), self.work(spec.model_validate(self.bounds))
        grows_s = self.at_defaults_s - self.at_smallest_s
        power = math.log((self.at_bounds_s - self.at_smallest_s) / grows_s) / math.log(
            at_bounds / at_defaults
        )
        seconds = self.at_smallest_s + grows_s * (self.work(params) / at_defaults) ** power
        return min(seconds, self.at_bounds_s)


DEMO_COSTS: dict[str, DemoCost] = {
    "all_reduce": DemoCost(
        0.1, 0.4, 11.7, {"size_mib": 64, "iterations": 20}, lambda p: p.size_mib * p.iterations
    ),
    "collectives": DemoCost(
        0.8,
        3.9,
        18.7,
        {"max_size_mib": 16, "sizes": 6, "iterations": 10},
        lambda p: p.max_size_mib * p.sizes * p.iterations,
    ),
    "mixed_precision": DemoCost(0.2, 0.4, 2.5, {"gradients": 2**20}, lambda p: p.gradients),
    "tensor_parallel": DemoCost(
        0.2,
        1.1,
        23.1,
        {"hidden": 512, "batch": 16, "seq_len": 64, "heads": 16, "iterations": 3},
        lambda p: len(p.layouts) * p.iterations * p.tokens * p.hidden * p.ffn_hidden,
    ),
    "pipeline_schedules": DemoCost(
        0.6,
        14.2,
        42.8,
        {
            "microbatches": 12,
            "forward_ms": 25,
            "backward_ms": 50,
            "hidden": 512,
            "microbatch_size": 64,
        },
        lambda p: (
            len(p.schedules)
            * p.microbatches
            * (p.forward_ms + p.backward_ms)
            * p.microbatch_size
            * p.hidden**2
        ),
    ),
    "activation_checkpointing": DemoCost(
        0.3,
        13.8,
        78.2,
        {"width": 256, "tokens": 512, "steps": 5},
        lambda p: p.steps * p.layers * p.tokens * p.width**2,
    ),
    "zero_stages": DemoCost(
        7.7,
        21.7,
        95.4,
        {"width": 128, "layers": 4, "vocab": 1024, "seq_len": 64, "batch": 8, "steps": 6},
        # About the parameters times the tokens: the blocks' 12 d^2 each, embedding and head.
        lambda p: (
            p.steps * p.batch * p.seq_len * (12 * p.layers * p.d_model**2 + 2 * p.vocab * p.d_model)
        ),
    ),
}


def estimated_cost_s(demo: str, params: BaseModel) -> float:
    """Seconds of the worker a run of `demo` with `params` is charged in the line."""
    return DEMO_COSTS[demo].estimate_s(params)
