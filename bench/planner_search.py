"""How long the layout planner's search takes: by default a 70B model on 1,024 H100s (8 per
node); with --run, a published run's own request (deepseek-v3: the largest search, an MoE on
2,048 GPUs).

Prints the median wall time of --runs searches (each with the search's own caches fresh; the
module-level ones, which a server keeps across requests, stay warm after the first), the first
run apart, and how many layouts the search looked at, kept as valid, and found fitting. With
--cold every module-level cache of app.calc is cleared before each search too: what a request
the server has never seen costs.

Run from the repository root:  .venv/bin/python bench/planner_search.py [--runs 7]
                               .venv/bin/python bench/planner_search.py --run deepseek-v3 --cold
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from app.calc.planner import cluster, plan, plan_request
from app.calc.planner.published import RUNS, request_for


def clear_module_caches() -> int:
    """Empty every functools cache of the app.calc modules loaded; how many there were."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith("app.calc"):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
                cleared += 1
    return cleared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--run", choices=list(RUNS), help="a published run's request instead")
    parser.add_argument("--cold", action="store_true", help="clear module-level caches too")
    parser.add_argument("--model", default="llama3-70b")
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--batch-tokens", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--seq-len", type=int, default=8192)
    args = parser.parse_args()
    if args.run:
        request = request_for(RUNS[args.run])
    else:
        request = plan_request(
            args.model, cluster(nodes=args.nodes), args.batch_tokens, args.seq_len, 15e12
        )
    times = []
    for _ in range(args.runs):
        if args.cold:
            clear_module_caches()
        start = time.perf_counter()
        result = plan(request)
        times.append(time.perf_counter() - start)
    rejected = sum(group.count for group in result.rejected)
    print(f"{request.model.name} on {request.cluster.gpus} GPUs, "
          f"{request.global_batch_tokens} tokens/step, seq {request.seq_len}")  # fmt: skip
    caches = "every cache cold" if args.cold else "module caches warm after the first"
    print(f"search ({caches}): median {statistics.median(times) * 1e3:.0f} ms over "
          f"{args.runs} runs "
          f"(first {times[0] * 1e3:.0f} ms, fastest {min(times) * 1e3:.0f} ms)")  # fmt: skip
    print(f"layouts: {result.enumerated} looked at, {rejected} rejected, {result.valid} valid, "
          f"{result.feasible} fitting, {len(result.pareto)} on the Pareto front")  # fmt: skip
    for group in result.rejected:
        print(f"  {group.rule:<28} {group.count:>7}")
    best = result.best
    if best is not None:
        print(f"best: {best.layout.describe()}: {best.step_time_s:.2f} s/step, "
              f"MFU {best.mfu:.1%}, {best.memory_bytes / 1e9:.1f} GB/GPU, "
              f"{best.days:.0f} days for {request.token_budget / 1e12:g}T tokens")  # fmt: skip


if __name__ == "__main__":
    main()
