"""`python -m app.calc memory`: training memory per GPU, or model states under ZeRO 0-3."""

from __future__ import annotations

import argparse

from app.calc.commands.options import (
    add_model_options,
    parse_model_options,
    positive_float,
    positive_int,
    print_json,
)
from app.calc.deepspeed_estimate import ZERO2_SOURCE, ZERO3_SOURCE, zero2_all_cold, zero3_all_cold
from app.calc.memory import (
    ZERO_STAGE_NAMES,
    ZERO_STAGES,
    PrecisionRecipe,
    largest_model,
    largest_model_all_stages,
    model_states_all_stages,
    model_states_per_gpu,
    precision_recipe,
)
from app.calc.training_query import TrainingQuery, training_result
from app.calc.units import MEMORY_UNITS, to_gb


def add_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    memory = commands.add_parser(
        "memory",
        help="training memory per GPU (every term), or model states under ZeRO 0-3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Three modes.\n\n"
            "With --params and --dp-degree: bytes of weights, gradients and optimizer states\n"
            "per GPU for mixed-precision Adam (2 + 2 + 12 bytes per parameter; --recipe and\n"
            "--optimizer pick another), sharded by ZeRO over the data-parallel degree (ZeRO\n"
            "paper, arXiv:1910.02054, Section 5.1). --deepspeed adds DeepSpeed's own\n"
            "estimate_zero2/zero3_model_states_mem_needs_all_cold tables for N_d GPUs\n"
            "(--gpus-per-node, --largest-layer-params; bytes / 2^30, as DeepSpeed prints).\n\n"
            "With --device-gb and --dp-degree: the largest model whose model states fit the\n"
            "device less --reserve-gb, per ZeRO stage: (M - R) / (w/N_w + g/N_g + K/N_os).\n\n"
            "Otherwise: the full training-memory calculator (the page at\n"
            "/calculators/training-memory), every term with its formula and source. Model\n"
            "fields left out come from --preset. GB = 10^9 bytes, GiB = 2^30 bytes.\n\n"
            "  python -m app.calc memory --params 7.5e9 --dp-degree 64\n"
            "  python -m app.calc memory --device-gb 80 --dp-degree 64 --stage 3\n"
            "  python -m app.calc memory --params 2851e6 --dp-degree 8 --deepspeed \\\n"
            "      --largest-layer-params 32e6\n"
            "  python -m app.calc memory --preset llama3-70b --dp 4 --tp 8 --pp 2 \\\n"
            "      --zero-stage 1 --recompute selective --seq-len 8192"
        ),
    )
    states = memory.add_argument_group("model states under ZeRO 0-3")
    states.add_argument("--params", type=positive_float, help="number of parameters, e.g. 7.5e9")
    states.add_argument(
        "--dp-degree", type=positive_int, help="data-parallel degree N_d (ranks ZeRO shards over)"
    )
    states.add_argument(
        "--stage", type=int, choices=ZERO_STAGES, help="one ZeRO stage; all four when left out"
    )
    states.add_argument(
        "--device-gb", type=positive_float, help="device memory in GB: the largest model that fits"
    )
    states.add_argument(
        "--reserve-gb", type=float, default=0.0, help="GB set aside for activations (default 0)"
    )
    states.add_argument(
        "--deepspeed", action="store_true", help="also DeepSpeed's ZeRO-2/3 estimator tables"
    )
    states.add_argument("--gpus-per-node", type=positive_int, default=8, help="default 8")
    states.add_argument(
        "--largest-layer-params", type=float, help="largest layer's parameters (ZeRO-3)"
    )
    full = memory.add_argument_group(
        "full training memory (bounds as on the page); --recipe and --optimizer apply to "
        "model states too"
    )
    add_model_options(full, TrainingQuery)
    memory.add_argument("--json", action="store_true", help="print JSON (bytes) instead of a table")
    return memory


def _training(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    query = parse_model_options(parser, args, TrainingQuery)
    result = training_result(query)
    if args.json:
        return print_json(result)
    unit = MEMORY_UNITS[query.unit]
    print(
        f"{result['model']['name']}: {result['total_params']:,} parameters; "
        f"dp {query.dp} x tp {query.tp} x pp {query.pp} x cp {query.cp}, ZeRO-{query.zero_stage}"
    )
    print(f"{'term':<34}{'GPU ' + query.unit:>12}{'CPU ' + query.unit:>12}  source")
    for t in result["terms"]:
        print(
            f"{t['label']:<34}{t['gpu_bytes'] / unit:>12.2f}{t['cpu_bytes'] / unit:>12.2f}"
            f"  {t['source']}"
        )
    print(f"{'total':<34}{result['gpu_bytes'] / unit:>12.2f}{result['cpu_bytes'] / unit:>12.2f}")
    verdict = "fits" if result["fits"] else "does not fit"
    print(
        f"{verdict} a {result['gpu']}: headroom {result['headroom_bytes'] / unit:.2f} "
        f"{query.unit}; largest micro-batch that fits: {result['largest_micro_batch']}"
    )
    return 0


def _largest(
    parser: argparse.ArgumentParser, args: argparse.Namespace, recipe: PrecisionRecipe
) -> int:
    if args.dp_degree is None:
        parser.error("--device-gb needs --dp-degree")
    device, reserve = args.device_gb * 1e9, args.reserve_gb * 1e9
    try:
        if args.stage is None:
            rows = largest_model_all_stages(device, args.dp_degree, recipe, reserve)
        else:
            rows = [largest_model(device, args.dp_degree, args.stage, recipe, reserve)]
    except ValueError as exc:
        parser.error(str(exc))
    if args.json:
        payload = [
            {
                "zero_stage": r.zero_stage,
                "bytes_per_param_per_gpu": r.bytes_per_param_per_gpu,
                "params": r.params,
            }
            for r in rows
        ]
        return print_json(
            {"device_bytes": device, "reserve_bytes": reserve, "dp_degree": args.dp_degree,
             "recipe": recipe.name, "stages": payload}
        )  # fmt: skip
    print(
        f"{recipe.name}; {args.device_gb:g} GB less {args.reserve_gb:g} GB reserve, "
        f"N_d = {args.dp_degree}"
    )
    print(f"{'stage':<20}{'B/param/GPU':>12}{'largest model':>16}")
    for r in rows:
        print(
            f"{ZERO_STAGE_NAMES[r.zero_stage]:<20}{r.bytes_per_param_per_gpu:>12.4g}"
            f"{r.params:>16.4g}"
        )
    return 0


def _deepspeed(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    gpus = min(args.gpus_per_node, args.dp_degree)
    if args.dp_degree % gpus:
        parser.error("--gpus-per-node must divide --dp-degree")
    nodes = args.dp_degree // gpus
    layer = args.largest_layer_params
    if layer is None:
        parser.error("--deepspeed needs --largest-layer-params (ZeRO-3's gathered layer)")
    try:
        zero2 = zero2_all_cold(args.params, gpus, nodes)
        zero3 = zero3_all_cold(args.params, layer, gpus, nodes)
    except ValueError as exc:
        parser.error(str(exc))
    return {"gpus_per_node": gpus, "nodes": nodes, "zero2": zero2, "zero3": zero3}


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        recipe = precision_recipe(
            getattr(args, "q_recipe", "mixed_bf16"), getattr(args, "q_optimizer", "adam")
        )
    except ValueError as exc:
        parser.error(str(exc))
    if args.device_gb is not None:
        return _largest(parser, args, recipe)
    if args.params is None and args.dp_degree is None and args.stage is None:
        return _training(parser, args)
    if args.params is None or args.dp_degree is None:
        parser.error("model-states mode needs both --params and --dp-degree")
    if args.stage is None:
        rows = model_states_all_stages(args.params, args.dp_degree, recipe)
    else:
        rows = [model_states_per_gpu(args.params, args.dp_degree, args.stage, recipe)]
    ds = _deepspeed(parser, args) if args.deepspeed else None
    if args.json:
        payload = [
            {
                "zero_stage": r.zero_stage,
                "weights_bytes": r.weights_bytes,
                "grads_bytes": r.grads_bytes,
                "optimizer_bytes": r.optimizer_bytes,
                "total_bytes": r.total_bytes,
            }
            for r in rows
        ]
        result = {"params": args.params, "dp_degree": args.dp_degree, "stages": payload}
        if ds:
            result["deepspeed"] = {
                **ds,
                "zero2": [vars(r) | {"printed": r.printed} for r in ds["zero2"]],
                "zero3": [vars(r) | {"printed": r.printed} for r in ds["zero3"]],
            }
        return print_json(result)
    print(f"{recipe.name}; {args.params:g} parameters, N_d = {args.dp_degree}")
    print(f"{'stage':<20}{'weights GB':>12}{'grads GB':>12}{'optimizer GB':>14}{'total GB':>12}")
    for r in rows:
        print(
            f"{ZERO_STAGE_NAMES[r.zero_stage]:<20}{to_gb(r.weights_bytes):>12.2f}"
            f"{to_gb(r.grads_bytes):>12.2f}{to_gb(r.optimizer_bytes):>14.2f}"
            f"{to_gb(r.total_bytes):>12.2f}"
        )
    if ds:
        print(
            f"\nDeepSpeed: {ds['nodes']} node(s) x {ds['gpus_per_node']} GPUs "
            "(bytes / 2^30, labelled GB as DeepSpeed prints)"
        )
        print("  per CPU  |  per GPU |   Options")
        for row in ds["zero2"] + ds["zero3"]:
            print(f"ZeRO-{row.zero_stage}{row.printed}")
        print(f"{ZERO2_SOURCE}\n{ZERO3_SOURCE}")
    return 0
