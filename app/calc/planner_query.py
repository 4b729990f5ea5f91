"""The layout planner's inputs: one flat model shared by the page, the shareable URL, the JSON
API and the command line, with every bound a person can hit explained in words.

The numbers are app.calc.planner's; this module only bounds what it is asked (so that one
request stays a few seconds of search at most). The form's fields and labels are
app.calc.planner_fields, the answer as plain data app.calc.planner_answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from app.calc.links import LINKS
from app.calc.messages import N_, Message, sentence, words_of
from app.calc.model import ModelConfig
from app.calc.performance import PerformanceProfile, load_profile
from app.calc.planner import (
    PIPELINE_SCHEDULES,
    RECOMPUTE,
    Layout,
    Plan,
    PlanRequest,
    WhyNot,
    cluster,
    plan,
    plan_request,
    why_not,
)
from app.calc.planner.published import RUNS, PublishedRun, request_for
from app.calc.planner_fields import GPU_TYPES, LABELS, LAYOUT_FIELDS, RUN_FIELDS, GpuType
from app.calc.profiles import built_in
from app.calc.training_query import ModelQuery, OptimizerName, Preset, RecipeName

MAX_GPUS = 16_384  # Llama 3 405B's largest run; bounds the search to seconds
MAX_TOP = 200
MAX_SEQUENCES = 65_536  # per step; the search tries every micro-batch dividing a replica's share
MAX_PROFILE_CHARS = 20_000  # a profile's JSON is about 1,000 characters

PlanKey = tuple[tuple[str, object], ...]
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

    def plan_key(self) -> PlanKey:
        """What the plan depends on: every input but the layout to explain."""
        return tuple(
            (name, getattr(self, name)) for name in type(self).model_fields
            if name not in LAYOUT_FIELDS
        )  # fmt: skip

    def plan(self) -> Plan:
        """The plan, cached: the page, its fragment and a click on a row ask the same one."""
        return PLANS.plan(self.plan_key())

    def is_planned(self) -> bool:
        """Whether the plan is cached, so that asking for it computes next to nothing."""
        return self.plan_key() in PLANS

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


class PlanCache:
    """The last `size` plans by their inputs: what makes the page, its fragment and a click
    on a row cheap after the first, and lets a route tell before it asks whether the search
    will run (a cached plan needs no heavy-work slot: app/heavy_work.py)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._plans: OrderedDict[PlanKey, Plan] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: PlanKey) -> bool:
        with self._lock:
            return key in self._plans

    def plan(self, key: PlanKey) -> Plan:
        with self._lock:
            if key in self._plans:
                self._plans.move_to_end(key)
                return self._plans[key]
        found = plan(PlannerQuery.model_construct(**dict(key)).request())
        with self._lock:
            self._plans[key] = found
            while len(self._plans) > self.size:
                self._plans.popitem(last=False)
        return found

    def cache_clear(self) -> None:  # as functools' caches are cleared (bench/planner_search.py)
        with self._lock:
            self._plans.clear()


PLANS = PlanCache(size=16)
