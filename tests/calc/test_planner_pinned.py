"""The layout planner's full answer, pinned: every ranked and Pareto layout with every number of
its cost, every count, every rejected example and every feasible step time, for the published
runs, the bench's default case and two small searches that reach the rules those do not
(GPipe, selective recompute without FlashAttention, ZeRO on one replica). The digests were
first taken from the search before it ran on arrays (2026-11-25), so that the faster search
provably changed nothing; they change when the model does (the notes above PINNED), and
tests/calc/test_planner_search.py checks that the arrays give one layout's own floats.

Three digests per plan: the numbers (layouts, costs, counts, step times, the rejected layouts),
the words (each rejected example's reason, in English) and the why-nots of a few layouts (every
field, the explanation in English). A reworded message changes only the second or the third;
print the new digests with `.venv/bin/python -m tests.calc.test_planner_pinned`.
"""

from __future__ import annotations

import hashlib
from array import array

import pytest

from app.calc.model import ModelConfig
from app.calc.planner import Layout, Plan, PlanRequest, cluster, plan, plan_request, why_not
from app.calc.planner.published import RUNS, request_for

MOE = ModelConfig(layers=6, hidden=96, heads=6, kv_heads=2, ffn_hidden=128, vocab=100,
                  experts=4, top_k=2, name="small MoE")  # fmt: skip


def _requests() -> dict[str, PlanRequest]:
    requests = {slug: request_for(run) for slug, run in RUNS.items()}
    # bench/planner_search.py's default case.
    requests["llama3-70b-1024"] = plan_request(
        "llama3-70b", cluster(nodes=128), 4 * 1024 * 1024, 8192, 15e12
    )
    # Too little memory for most layouts (out_of_memory), GPipe searched (gpipe_dominated),
    # no FlashAttention (selective recompute searched), few GPUs (zero_needs_dp), a short
    # list (top).
    requests["llama3-8b-8"] = plan_request(
        "llama3-8b", cluster(nodes=1), 256 * 4096, 4096, 1e12,
        flash_attention=False, schedules=("1f1b", "interleaved", "zb-h1", "gpipe"), top=7,
    )  # fmt: skip
    # A mixture of experts on 16 GPUs over 4 nodes: ep, cp, uneven stages, every schedule.
    requests["moe-16"] = plan_request(
        MOE, cluster(gpus_per_node=4, nodes=4), 48 * 64, 64, 1e9, uneven_pipeline=True,
        schedules=("1f1b", "interleaved", "zb-h1", "gpipe"), max_micro_batch=8,
        max_virtual_stages=3, recompute_modes=("full", "none"),
    )  # fmt: skip
    return requests


def _sha(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()[:16]


def digests(result: Plan) -> tuple[str, str]:
    """(numbers, words) of a plan: repr keeps every float to the last bit."""
    numbers = repr(
        (
            result.enumerated, result.valid, result.feasible, result.ranked, result.pareto,
            [(g.rule, g.count, [r.layout for r in g.examples]) for g in result.rejected],
        )
    )  # fmt: skip
    times = array("d", result.step_times_s).tobytes()
    words = repr([[str(r.reason) for r in g.examples] for g in result.rejected])
    return _sha(numbers.encode() + times), _sha(words.encode())


def why_not_digest(result: Plan) -> str:
    """Why-nots of the published layouts and of layouts around the best (slower, too big,
    invalid), every field of each."""
    layouts = [run.layout for run in RUNS.values()]
    if result.best is not None:
        best = result.best.layout
        layouts += [
            Layout(best.dp, best.tp, best.pp, best.cp, best.ep, recompute="full"),
            Layout(best.world_size),
            Layout(best.dp, best.tp, best.pp, best.cp, best.ep, micro_batch=3),
            best,
        ]
    answers = [why_not(result, lay) for lay in layouts]
    return _sha(repr([(a, str(a.explanation)) for a in answers]).encode())


# The why-not digests last changed when the answer named its term in words ("exposed DP
# (gradient reduce / ZeRO gathers), +0.3 s over the best layout's") instead of its code name
# ("exposed_dp (+0.3 s)"); numbers did not. Every digest changed again (2026-11-27) when DDP
# and ZeRO-1 stopped counting a 25 MiB bucket beside gradients that are the buckets' views
# (app.calc.training, Buffers): each ZeRO-0/1 layout needs exactly 25 MiB less, ZeRO-2/3
# layouts are unchanged, every ranked list is the same, and 56 more DeepSeek-V3 layouts fit.
# The why-not digests changed again (2026-11-27) when the published Llama 3 405B layout became
# ZeRO-2 (its paper's FSDP) instead of the distributed optimizer: why_not asks about every
# published layout, so every plan's third digest moved; no plan's numbers or words did.
# Every digest changed again (2026-11-28) with the calibrated performance model
# (app.calc.performance, the profiles fitted to published runs): new step times and memory
# terms, the published runs' frameworks limiting their searches (sequence and context
# parallelism, ZeRO options: rule not_offered), Llama 3's v = 7. The search's floats still
# equal Costs.cost's to the last bit (tests/calc/test_planner_search.py). The numbers and
# why-nots changed again (2026-11-28) when the last gradient bucket's collectives stopped
# hiding behind the backward (Costs.zero_terms, comm_volume.bucket_elements) and the profiles
# were refitted; BLOOM's plan also changed when its request took DeepSpeed's bf16 recipe (an
# unsharded fp32 copy of the gradients): its no-recompute tp=4 pp=12 layout no longer fits.
# Layouts with cp > 1 changed again when ring attention was charged a kernel and two
# corrections per ring step (app.calc.planner.work). BLOOM's plan changed when its request
# required the fused softmax kernel (rule fused_softmax) and its profile's memory terms were
# fitted to BigScience's nvidia-smi readings. Megatron 1T's why-nots changed in the last bit
# of one float when the collectives' volumes were multiplied in floats, not Fractions.
PINNED: dict[str, tuple[str, str, str]] = {
    "megatron-1t": ("08685e3a0d65bb4b", "1d508cd903fe6ae2", "480d3da5964842dc"),
    "bloom-176b": ("1c0129521eea79ba", "c5b719f01aa134ec", "5d4670f42a1c9bf2"),
    "llama3-405b": ("9c1d43d1db6e704e", "af033aabc47a19db", "fb9191dbef7f177d"),
    "deepseek-v3": ("71886f092aaed5a2", "b5fc8dd8e08cde89", "74ec894db0a061d1"),
    "llama3-70b-1024": ("41e66b660881416d", "a43aa330f1feca1d", "68a28b95db147183"),
    "llama3-8b-8": ("13c5e202bb2b48be", "e47b41557a0bd1b1", "c5154d7122d6c317"),
    "moe-16": ("b31b4d1f93ccc0ce", "3407440a6802312d", "aa41c9f7f63906f5"),
}


@pytest.mark.parametrize("name", list(PINNED))
def test_plan_is_unchanged(name: str) -> None:
    result = plan(_requests()[name])
    assert (*digests(result), why_not_digest(result)) == PINNED[name]


def test_every_case_is_pinned() -> None:
    assert set(PINNED) == set(_requests())


if __name__ == "__main__":
    for key, req in _requests().items():
        result = plan(req)
        print(f"    {key!r}: {(*digests(result), why_not_digest(result))!r},")


def test_why_not_names_the_term_to_blame_in_words() -> None:
    from app.calc.planner.request import STEP_TERM_WORDS

    result = plan(_requests()["llama3-70b-1024"])
    slower = next(w for w in (why_not(result, c.layout) for c in result.ranked[1:])
                  if w.slowdown is not None and w.slowdown > 1)  # fmt: skip
    assert slower.blame in STEP_TERM_WORDS
    assert STEP_TERM_WORDS[slower.blame] in slower.explanation
    assert slower.blame not in slower.explanation.replace(STEP_TERM_WORDS[slower.blame], "")
