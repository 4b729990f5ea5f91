"""`python -m app.calc inference`: memory per GPU for serving a model (weights, KV cache)."""

from __future__ import annotations

import argparse

from app.calc.commands.options import add_model_options, parse_model_options, print_json
from app.calc.inference_query import InferenceQuery, inference_result
from app.calc.units import MEMORY_UNITS


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "inference",
        help="inference memory per GPU: weights, KV cache, overhead; largest batch and context",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Memory per GPU for serving a model with t-way tensor parallelism (the page at\n"
            "/calculators/inference-memory): weights Psi*B/t, KV cache 2*L*k*d*s*b*B with KV\n"
            "heads per GPU max(1, k // t) as vLLM replicates them, and a runtime overhead;\n"
            "judged against utilisation x GPU memory (vLLM --gpu-memory-utilization 0.9).\n\n"
            "  python -m app.calc inference --preset llama2-70b --tp 4 --context 4096 --batch 16\n"
            "  python -m app.calc inference --preset llama3-8b --weight-dtype int4 --json\n\n"
            "MLA (--attention mla): (kv_lora_rank + qk_rope_head_dim)*L*B per token, the whole\n"
            "latent on every TP rank. --params 70e9 replaces the exact count by a nominal one;\n"
            "--kv-bytes-per-token replaces the shape's KV size (the whole model's, per token).\n\n"
            "  python -m app.calc inference --params 70e9 --weight-dtype fp8 --tp 2"
        ),
    )
    add_model_options(parser.add_argument_group("inputs (bounds as on the page)"), InferenceQuery)
    parser.add_argument("--json", action="store_true", help="print JSON (bytes) instead of a table")
    return parser


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, InferenceQuery)
    result = inference_result(query)
    if args.json:
        return print_json(result)
    unit = MEMORY_UNITS[query.unit]
    print(
        f"{result['model']['name']}: {result['total_params']:,} parameters"
        f"{' (nominal)' if result['nominal_params'] else ''}; tp {query.tp}, "
        f"context {query.context:,}, batch {query.batch:,}"
    )
    if result["attention"] == "mla":
        held = "the whole latent on every GPU" if query.tp > 1 else "one GPU"
        print(
            f"KV cache per token (MLA, d_c {result['kv_lora_rank']} + d_h^R "
            f"{result['qk_rope_head_dim']}): {result['kv_bytes_per_token_model']:,.0f} B for the "
            f"model, {result['kv_bytes_per_token_gpu']:,.0f} B per GPU ({held})"
        )
    else:
        print(
            f"KV cache per token: {result['kv_bytes_per_token_model']:,.0f} B for the model, "
            f"{result['kv_bytes_per_token_gpu']:,.0f} B per GPU "
            f"({result['kv_heads_per_gpu']} KV head(s) per GPU"
            f"{', replicated' if result['kv_replicated'] else ''})"
        )
    print(f"{'term':<28}{query.unit + ' per GPU':>14}  source")
    for t in result["terms"]:
        print(f"{t['label']:<28}{t['bytes'] / unit:>14.2f}  {t['source']}")
    print(f"{'total':<28}{result['total_bytes'] / unit:>14.2f}")
    verdict = "fits" if result["fits"] else "does not fit"
    print(
        f"{verdict} {query.utilisation:g} x {result['gpu']} = "
        f"{result['budget_bytes'] / unit:.2f} {query.unit}; headroom "
        f"{result['headroom_bytes'] / unit:.2f} {query.unit}"
    )
    print(
        f"left for the KV cache per GPU: {result['free_for_kv_bytes'] / unit:.2f} {query.unit}, "
        f"{result['tokens_that_fit']:,} tokens"
    )
    print(
        f"largest batch at context {query.context:,}: {result['largest_batch']:,}; "
        f"largest context at batch {query.batch:,}: {result['largest_context']:,}"
    )
    return 0
