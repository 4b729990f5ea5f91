"""The layout planner's inputs: one flat model shared by the page, the shareable URL, the JSON
API and the command line, with every bound a person can hit explained in words; and its full
answer as plain data.

The numbers are app.calc.planner's; this module only bounds what it is asked (so that one
request stays a few seconds of search at most) and lays its answer out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from app.calc.hardware import ACCELERATORS
from app.calc.links import LINKS
from app.calc.messages import N_, Message, sentence, words_of
from app.calc.model import ModelConfig, count_params
from app.calc.performance import PerformanceProfile, load_profile
from app.calc.planner import (
    PIPELINE_SCHEDULES,
    RECOMPUTE,
    RULES,
    STEP_TERMS,
    Layout,
    LayoutCost,
    Plan,
    PlanRequest,
    WhyNot,
    cluster,
    plan,
    plan_request,
    why_not,
)
from app.calc.planner.published import (
    RUNS,
    PublishedRun,
    RunCost,
    evaluate_run,
    request_for,
    strict_rule,
)
from app.calc.profiles import built_in
from app.calc.training_query import LABELS as TRAINING_LABELS
from app.calc.training_query import (
    MODEL_FIELDS,
    ModelQuery,
    OptimizerName,
    Preset,
    RecipeName,
)

# How the answer's words reach the reader: str, English; a page's translation (app.i18n.say).
Say = Callable[[str], str]

MAX_GPUS = 16_384  # Llama 3 405B's largest run; bounds the search to seconds
MAX_TOP = 200
MAX_SEQUENCES = 65_536  # per step; the search tries every micro-batch dividing a replica's share
MAX_PROFILE_CHARS = 20_000  # a profile's JSON is about 1,000 characters


@dataclass(frozen=True)
class GpuType:
    """A GPU as the planner needs it: its FLOPs, its memory and the link inside its node."""

    accelerator: str  # app.calc.hardware.ACCELERATORS
    memory: str  # app.calc.gpus.GPUS
    intra_node: str  # app.calc.links.LINKS, the usual link between GPUs of one node

    @property
    def name(self) -> str:
        return ACCELERATORS[self.accelerator].name


GPU_TYPES: dict[str, GpuType] = {
    "h100-sxm": GpuType("h100-sxm", "h100-80gb", "nvlink4"),
    "h200": GpuType("h200", "h200", "nvlink4"),
    "a100-80gb-sxm": GpuType("a100-80gb-sxm", "a100-80gb", "nvlink3"),
    "h100-pcie": GpuType("h100-pcie", "h100-80gb", "pcie5"),
}

# Presets of published runs (app.calc.planner.published): a label, where it comes from, and
# the page's inputs. `run` takes the model, cluster, batch and layout from the run itself:
# some runs' models and clusters (Jean Zay's Omni-Path, the H800) are no preset of the form.
RUN_PRESETS: dict[str, tuple[str, str, dict[str, object]]] = {
    slug: (run.title, run.source, {"run": slug}) for slug, run in RUNS.items()
}

LAYOUT_FIELDS = (
    "dp", "tp", "pp", "cp", "ep", "zero_stage", "distributed_optimizer", "recompute",
    "micro_batch", "schedule", "virtual_stages",
)  # fmt: skip

# What a published run fixes: its model, its cluster and its batch. A query naming a run
# leaves these out.
RUN_FIELDS = (
    "preset", *MODEL_FIELDS, "gpu", "gpus_per_node", "nodes", "intra_node", "inter_node",
    "global_batch_tokens", "seq_len", "token_budget", "flash_attention", "uneven_pipeline",
)  # fmt: skip

LABELS = {
    **TRAINING_LABELS,
    "run": "Published run",
    "preset": "Model",
    "gpu": "GPU type",
    "gpus_per_node": "GPUs per node",
    "nodes": "Nodes",
    "intra_node": "Link inside a node",
    "inter_node": "Link between nodes",
    "global_batch_tokens": "Global batch (tokens)",
    "seq_len": "Sequence length",
    "token_budget": "Token budget",
    "flash_attention": "FlashAttention",
    "uneven_pipeline": "Uneven pipeline stages",
    "matmul_efficiency": "Matmul efficiency",
    "profile": "Performance profile",
    "top": "Layouts listed",
    "dp": "Layout DP",
    "tp": "Layout TP",
    "pp": "Layout PP",
    "cp": "Layout CP",
    "ep": "Layout EP",
    "zero_stage": "Layout ZeRO stage",
    "distributed_optimizer": "Layout distributed optimizer",
    "recompute": "Layout recompute",
    "micro_batch": "Layout micro-batch",
    "schedule": "Layout schedule",
    "virtual_stages": "Layout virtual stages",
}

GpuTypeName = Literal[tuple(GPU_TYPES)]  # type: ignore[valid-type]
LinkName = Literal[tuple(LINKS)]  # type: ignore[valid-type]
ScheduleName = Literal[PIPELINE_SCHEDULES]  # type: ignore[valid-type]
RecomputeName = Literal[RECOMPUTE]  # type: ignore[valid-type]
RunName = Literal[tuple(RUNS)]  # type: ignore[valid-type]


def _degree(description: str = "") -> Any:
    return Field(ge=1, le=MAX_GPUS, description=description)


class PlannerInputs(ModelQuery):
    """Everything the planner takes: a model (a preset, or shape fields given instead), the
    cluster, the batch and the token budget; optionally one layout to explain ("why not").

    Checked here only for what is cheap to check. The rest (a batch of no whole number of
    sequences, a layout the cluster cannot hold, ...) shows only when the planner searches,
    which takes seconds for the largest models: PlannerQuery checks it as it validates, and
    the JSON API, whose inputs FastAPI validates on the event loop, asks search_problems in
    its route's thread instead (issue #25: a search in a validator held every other page).
    """

    run: RunName | None = Field(
        None, description="a published run: its model, cluster, batch and layout"
    )
    preset: Preset = Field("llama3-8b", description="A published model, or 'custom'.")

    gpu: GpuTypeName = Field("h100-sxm", description="accelerator: peak FLOP/s and memory")
    gpus_per_node: Annotated[int, Field(ge=1, le=16)] = 8
    nodes: Annotated[int, Field(ge=1, le=MAX_GPUS)] = 1
    intra_node: LinkName | None = Field(None, description="empty: the GPU type's own link")
    inter_node: LinkName = "ib-ndr"
    global_batch_tokens: Annotated[
        int, Field(ge=1, le=2**27, description="tokens per optimizer step")
    ] = 2**20
    seq_len: Annotated[int, Field(ge=1, le=1_048_576)] = 8192
    token_budget: Annotated[float, Field(gt=0, le=1e15, description="tokens to train on")] = 1e12
    recipe: RecipeName = "mixed_bf16"
    optimizer: OptimizerName = "adam"
    flash_attention: bool = True
    uneven_pipeline: bool = Field(False, description="allow pp not dividing the layers")
    matmul_efficiency: Annotated[
        float | None,
        Field(
            ge=0.05,
            le=1,
            description="the matmul ceiling as a fraction of peak (the profile's "
            "gemm_efficiency multiplies it); empty: the measured MAMF",
        ),
    ] = None
    top: Annotated[int, Field(ge=1, le=MAX_TOP, description="ranked layouts listed")] = 50
    profile: Annotated[
        str | None,
        Field(
            max_length=MAX_PROFILE_CHARS,
            description=(
                f"performance profile: a built-in one's name ({', '.join(built_in())}) or a "
                "profile's JSON, as `python -m app.calc calibrate` writes it; empty: the "
                "default, fitted to published Megatron-style runs"
            ),
        ),
    ] = None

    # One layout to explain (why not?); all empty: the best. Degrees left out are 1, dp the rest.
    dp: Annotated[int | None, _degree("layout: data parallel")] = None
    tp: Annotated[int | None, _degree("layout: tensor parallel")] = None
    pp: Annotated[int | None, _degree("layout: pipeline parallel")] = None
    cp: Annotated[int | None, _degree("layout: context parallel")] = None
    ep: Annotated[int | None, _degree("layout: expert parallel")] = None
    zero_stage: Annotated[int | None, Field(ge=0, le=3, description="layout: ZeRO stage")] = None
    distributed_optimizer: bool | None = Field(None, description="layout: Megatron's")
    recompute: RecomputeName | None = Field(None, description="layout: activation recompute")
    micro_batch: Annotated[
        int | None, Field(ge=1, le=4096, description="layout: micro-batch b")
    ] = None
    schedule: ScheduleName | None = Field(None, description="layout: pipeline schedule")
    virtual_stages: Annotated[
        int | None, Field(ge=1, le=64, description="layout: model chunks per stage v")
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _published_run(cls, data: Any) -> Any:
        """A run's model, cluster and batch, and its layout unless the query names one."""
        slug = data.get("run") if isinstance(data, dict) else None
        if not isinstance(slug, str) or slug not in RUNS:
            return data  # no run, or a bad slug for the field's own message
        given = [Message(LABELS.get(k, k)) for k in RUN_FIELDS if data.get(k) not in (None, "")]
        if given:
            template = N_(
                "A published run fixes the model, the cluster and the batch; leave out %(fields)s"
            )
            raise ValueError(Message(template, fields=Message.join(", ", given)))
        run = RUNS[slug]
        filled = {**run_values(run), **data}
        if all(data.get(k) in (None, "") for k in LAYOUT_FIELDS):
            filled.update({k: getattr(run.layout, k) for k in LAYOUT_FIELDS})
        return filled

    @model_validator(mode="after")
    def _consistent(self) -> PlannerInputs:
        problems = self.shape_problems(self.model())
        try:
            self.performance_profile()
        except ValueError as exc:
            template = N_("The performance profile: %(problem)s")
            problems.append(Message(template, problem=words_of(exc)))
            raise ValueError(Message.join("; ", problems)) from None
        gpus = self.gpus_per_node * self.nodes
        if gpus > MAX_GPUS:
            template = N_("GPUs per node × nodes must be at most %(most)s (here %(gpus)s)")
            problems.append(Message(template, most=f"{MAX_GPUS:,}", gpus=f"{gpus:,}"))
        sequences = self.global_batch_tokens // self.seq_len
        if sequences > MAX_SEQUENCES:
            template = N_("The global batch must be at most %(most)s sequences (here %(n)s)")
            problems.append(Message(template, most=f"{MAX_SEQUENCES:,}", n=f"{sequences:,}"))
        if problems:
            raise ValueError(Message.join("; ", problems))
        return self

    def search_problems(self) -> Message | None:
        """What the planner's own checks refuse (a batch that is no whole number of sequences,
        ...), as a message, never a failure later; None when it searches. Searches, so slow
        the first time for a large model (the plan is cached)."""
        try:
            self.plan()
            self.why_not()
        except ValueError as exc:
            return sentence(words_of(exc))
        except ArithmeticError as exc:  # numbers so extreme the costs overflow
            template = N_("These inputs are beyond what the planner can cost (%(error)s)")
            return Message(template, error=str(exc))
        return None

    @property
    def gpu_type(self) -> GpuType:
        return GPU_TYPES[self.gpu]

    def performance_profile(self) -> PerformanceProfile | None:
        """The profile the query names (a built-in one or JSON), or None for the default."""
        return profile_named(self.profile)

    @property
    def published_run(self) -> PublishedRun | None:
        return RUNS[self.run] if self.run else None

    def model(self) -> ModelConfig:
        run = self.published_run
        return run.model if run else super().model()

    def request(self) -> PlanRequest:
        run = self.published_run
        if run:
            chosen = self.performance_profile()
            return request_for(run, recipe=self.recipe, optimizer=self.optimizer,
                               matmul_efficiency=self.matmul_efficiency, top=self.top,
                               **({"profile": chosen} if chosen else {}))  # fmt: skip
        gpu = self.gpu_type
        return plan_request(
            self.model(),
            cluster(
                accelerator=gpu.accelerator,
                gpu=gpu.memory,
                gpus_per_node=self.gpus_per_node,
                nodes=self.nodes,
                intra_node=self.intra_node or gpu.intra_node,
                inter_node=self.inter_node,
            ),
            self.global_batch_tokens,
            self.seq_len,
            self.token_budget,
            recipe=self.recipe,
            optimizer=self.optimizer,
            flash_attention=self.flash_attention,
            uneven_pipeline=self.uneven_pipeline,
            matmul_efficiency=self.matmul_efficiency,
            top=self.top,
            **({"profile": chosen} if (chosen := self.performance_profile()) else {}),
        )

    def plan(self) -> Plan:
        """The plan, cached: the page, its fragment and a click on a row ask the same one."""
        key = tuple(
            (name, getattr(self, name)) for name in type(self).model_fields
            if name not in LAYOUT_FIELDS
        )  # fmt: skip
        return _cached_plan(key)

    def layout(self) -> Layout | None:
        """The layout the query names, or None when it names none (the best is shown)."""
        if all(getattr(self, name) is None for name in LAYOUT_FIELDS):
            return None
        tp, pp, cp = self.tp or 1, self.pp or 1, self.cp or 1
        gpus = self.gpus_per_node * self.nodes
        schedule = self.schedule or "1f1b"
        # Sequence parallelism comes with tp > 1 where the request's framework offers it.
        offered = self.plan().request.sequence_parallel
        return Layout(
            dp=self.dp or max(1, gpus // (tp * pp * cp)),
            tp=tp,
            pp=pp,
            cp=cp,
            ep=self.ep or 1,
            zero_stage=self.zero_stage or 0,
            distributed_optimizer=bool(self.distributed_optimizer),
            recompute=self.recompute or "none",
            micro_batch=self.micro_batch or 1,
            schedule=schedule,
            virtual_stages=self.virtual_stages or (2 if schedule == "interleaved" else 1),
            sequence_parallel=None if offered else False,
        )

    def why_not(self) -> WhyNot | None:
        layout = self.layout()
        return None if layout is None else why_not(self.plan(), layout)


class PlannerQuery(PlannerInputs):
    """The planner's inputs, checked in full: valid only if the planner can search them."""

    @model_validator(mode="after")
    def _searchable(self) -> PlannerQuery:
        problem = self.search_problems()
        if problem is not None:
            raise ValueError(problem)
        return self


@lru_cache(maxsize=64)
def profile_named(text: str | None) -> PerformanceProfile | None:
    """A built-in profile by name, a profile from its JSON, or None when `text` is empty;
    ValueError says what is wrong with it."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text in built_in():
        return built_in()[text]
    if not text.startswith("{"):
        raise ValueError(
            f"{text[:40]!r} is neither a built-in profile ({', '.join(built_in())}) nor JSON"
        )
    return load_profile(text)


def profile_data(profile: PerformanceProfile) -> dict[str, Any]:
    """A profile as plain data: its name, where it came from and every parameter."""
    return {
        "name": profile.name,
        "source": profile.source,
        "values": profile.values(),
        "gemm_flops": profile.gemm_flops,
        "hbm_bytes_per_s": profile.hbm_bytes_per_s,
    }


def run_values(run: PublishedRun) -> dict[str, Any]:
    """The query fields a run fixes, as near as the form's fields can say them: the GPU type
    with the run's memory, and a link only where it is one of app.calc.links' presets."""
    n = run.cluster
    gpu = next(k for k, g in GPU_TYPES.items() if g.memory == run.gpu_memory)
    values: dict[str, Any] = {
        "preset": run.preset or "custom", "gpu": gpu, "gpus_per_node": n.gpus_per_node,
        "nodes": n.nodes, "global_batch_tokens": run.global_batch_tokens,
        "seq_len": run.seq_len, "token_budget": run.token_budget,
        "flash_attention": run.options.get("flash_attention", True),
        "uneven_pipeline": run.options.get("uneven_pipeline", False),
    }  # fmt: skip
    if "recipe" in run.options:  # the run's own, which a query may still change
        values["recipe"] = run.options["recipe"]
    if LINKS.get(n.inter_node.slug) == n.inter_node:
        values["inter_node"] = n.inter_node.slug
    if LINKS.get(n.intra_node.slug) == n.intra_node:
        values["intra_node"] = n.intra_node.slug
    return values


@lru_cache(maxsize=16)
def _cached_plan(key: tuple[tuple[str, object], ...]) -> Plan:
    return plan(PlannerQuery.model_construct(**dict(key)).request())


def layout_data(layout: Layout) -> dict[str, Any]:
    return {
        **{name: getattr(layout, name) for name in LAYOUT_FIELDS},
        "sequence_parallel": layout.sp,
        "gpus": layout.world_size,
        "description": layout.describe(),
    }


def cost_data(cost: LayoutCost, pareto: bool) -> dict[str, Any]:
    """One layout's cost: memory per GPU and the step time term by term, in raw units."""
    return {
        "layout": layout_data(cost.layout),
        "microbatches": cost.microbatches,
        "memory_bytes": cost.memory_bytes,
        "model_states_bytes": cost.model_states_bytes,
        "activation_bytes": cost.activation_bytes,
        "other_bytes": cost.other_bytes,
        "loss_bytes": cost.loss_bytes,
        "allocator_bytes": cost.allocator_bytes,
        "fits": cost.fits,
        "headroom_bytes": cost.headroom_bytes,
        "step_time_s": cost.step_time_s,
        "step": cost.step.terms(),
        "mfu": cost.mfu,
        "hfu": cost.hfu,
        "tokens_per_s": cost.tokens_per_s,
        "days": cost.days,
        "placement": asdict(cost.placement),
        "pareto": pareto,
    }


def _why_not_data(why: WhyNot, say: Say) -> dict[str, Any]:
    return {
        "layout": layout_data(why.layout),
        "valid": not why.rejected,
        "broken": [
            {"rule": r.rule, "description": say(RULES[r.rule]), "reason": say(r.reason)}
            for r in why.rejected
        ],
        "fits": why.cost.fits if why.cost else None,
        "slowdown": why.slowdown,
        "blame": why.blame,
        "blame_s": why.blame_s,
        "explanation": say(why.explanation),
    }


def published_data(query: PlannerInputs, say: Say = str) -> dict[str, Any] | None:
    """The run the query names: its figure beside the planner's for the published layout, the
    ratio and its band, the rule the layout breaks with equal stages, and where it ranks."""
    run = query.published_run
    if run is None:
        return None
    result = query.plan()
    rated = evaluate_run(run, result.request)
    rule = strict_rule(run)
    data: dict[str, Any] = {
        "slug": run.slug, "title": run.title, "source": run.source,
        "layout": layout_data(run.layout), "metric": run.metric, "published": run.published,
        "band": list(run.band), "gap": run.gap, "strict_rule": rule,
        "strict_rule_description": say(RULES[rule]) if rule else None,
        "broken": None, "predicted": None, "ratio": None, "in_band": None, "fits": None,
        "rank": None, "listed": len(result.ranked), "feasible": result.feasible,
        "slowdown": None,
    }  # fmt: skip
    if not isinstance(rated, RunCost):
        data["broken"] = rated
        return data
    step = rated.cost.step_time_s
    best = result.best
    data.update(
        predicted=rated.predicted, ratio=rated.ratio, fits=rated.cost.fits,
        in_band=run.band[0] <= rated.ratio <= run.band[1],
        # Among every feasible layout by step time; a layout that does not fit has none.
        rank=result.rank_of(step) if rated.cost.fits else None,
        slowdown=step / best.step_time_s if best else None,
    )  # fmt: skip
    return data


def chosen_cost(query: PlannerInputs) -> LayoutCost | None:
    """The layout whose breakdown is shown: the one the query names if it breaks no rule,
    else the best."""
    why = query.why_not()
    if why is not None and why.cost is not None:
        return why.cost
    return query.plan().best


def planner_result(query: PlannerInputs, say: Say = str) -> dict[str, Any]:
    """The planner's full answer as plain data: what the API returns and `--json` prints.

    Its words (the rules, why a layout is refused or slower) in English; a page passes `say`
    to have them in its reader's language (app.i18n.say)."""
    result = query.plan()
    req = result.request
    front = {c.layout for c in result.pareto}
    chosen = chosen_cost(query)
    why = query.why_not()
    counts = count_params(req.model)
    n = req.cluster
    return {
        "model": req.model.name,
        "total_params": counts.total,
        "active_params": counts.active,
        "cluster": {
            "gpu": n.accelerator.slug,
            "gpu_name": n.accelerator.name,
            "gpu_memory_bytes": n.gpu_memory_bytes,
            "gpus_per_node": n.gpus_per_node,
            "nodes": n.nodes,
            "gpus": n.gpus,
            "intra_node": n.intra_node.slug,
            "inter_node": n.inter_node.slug,
        },
        "global_batch_tokens": req.global_batch_tokens,
        "global_batch_sequences": req.global_batch_sequences,
        "seq_len": req.seq_len,
        "token_budget": req.token_budget,
        "matmul_efficiency": req.efficiency,
        "profile": profile_data(req.profile),
        "enumerated": result.enumerated,
        "valid": result.valid,
        "feasible": result.feasible,
        "ranked": [cost_data(c, c.layout in front) for c in result.ranked],
        "pareto": [cost_data(c, True) for c in result.pareto],
        "rejected": [
            {
                "rule": g.rule,
                "description": say(g.description),
                "count": g.count,
                "examples": [
                    {"layout": layout_data(r.layout), "reason": say(r.reason)} for r in g.examples
                ],
            }
            for g in result.rejected
        ],
        "chosen": cost_data(chosen, chosen.layout in front) if chosen else None,
        "chosen_is_best": chosen is not None and chosen == result.best,
        "why_not": _why_not_data(why, say) if why else None,
        "published": published_data(query, say),
        "step_terms": list(STEP_TERMS),
    }
