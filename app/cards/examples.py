"""Worked examples inside cards, computed by the calculators when the card renders.

A card writes
    ```example training-memory
    preset: llama3-70b
    tp: 8
    ```
and gets that calculator's own result (the same fragment its page shows, from the same
code) and a link to the calculator filled in with those inputs, so no figure a calculator
can compute is ever typed into a card. The block's fields are the calculator's input fields.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from html import escape
from urllib.parse import urlencode

import yaml
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request

from app.calc.planner import Layout, cluster, plan, plan_request, why_not
from app.calculators.schemas import MemoryQuery
from app.i18n import N_, gettext
from app.templating import templates
from app.worked.memory import stage_views
from app.worked.planner import STEP_LABELS
from app.yaml_text import load_yaml

# Each calculator a card can name (in front matter and in its ```example blocks, by the same
# slugs): its page, and its name, translated where a page shows it.
CALCULATOR_PAGES = {
    "memory": (N_("Memory per GPU (ZeRO)"), "/calculators/memory"),
    "training-memory": (N_("Training memory per GPU"), "/calculators/training-memory"),
    "communication": (N_("Communication per step"), "/calculators/communication"),
    "pipeline": (N_("Pipeline schedules"), "/calculators/pipeline"),
    "compute": (N_("Compute and training time"), "/calculators/compute"),
    "roofline": (N_("Roofline"), "/calculators/roofline"),
    "inference-memory": (N_("Inference memory"), "/calculators/inference-memory"),
    "failures": (N_("Failures and checkpoints"), "/calculators/failures"),
    "planner": (N_("Parallel layout planner"), "/calculators/planner"),
}


class ExampleError(ValueError):
    """A card's example block is malformed; raised while the card library loads."""


def _inputs(body: str) -> dict[str, object]:
    try:
        data = load_yaml(body) or {}
    except yaml.YAMLError as exc:
        raise ExampleError(str(exc)) from exc
    if not isinstance(data, dict):
        raise ExampleError("an example block holds `field: value` lines")
    return data


def memory_example(body: str) -> str:
    try:
        query = MemoryQuery.model_validate(_inputs(body))
    except ValidationError as exc:
        raise ExampleError(str(exc)) from exc
    table = templates.get_template("calculators/_memory_breakdown.html").render(
        query=query, stages=stage_views(query.params, query.dp_degree), show_link=True
    )
    return f'<div class="worked-example">{table}</div>\n'


class PlannerExample(BaseModel):
    """A planner block: the request's fields (app.calc.planner.plan_request), and layouts to
    compare with the best (each a mapping of app.calc.planner.Layout's fields)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "llama3-70b"
    nodes: int = Field(default=8, ge=1, le=4096)
    gpus_per_node: int = Field(default=8, ge=1, le=72)
    accelerator: str = "h100-sxm"
    gpu: str = "h100-80gb"
    intra_node: str = "nvlink4"
    inter_node: str = "ib-ndr"
    global_batch_tokens: int = Field(default=2**22, ge=1)
    seq_len: int = Field(default=8192, ge=1)
    token_budget: float = Field(default=15e12, gt=0)
    compare: list[dict[str, int | str | bool]] = Field(default_factory=list)


def planner_example(body: str) -> str:
    """The planner's best layout for the block's request, its step term by term, the Pareto
    front and, for each layout in `compare`, why it is not the best (app.calc.planner)."""
    try:
        spec = PlannerExample.model_validate(_inputs(body))
        machines = cluster(spec.accelerator, spec.gpu, spec.gpus_per_node, spec.nodes,
                           spec.intra_node, spec.inter_node)  # fmt: skip
        request = plan_request(spec.model, machines, spec.global_batch_tokens, spec.seq_len,
                               spec.token_budget)  # fmt: skip
        compared = [Layout(**fields) for fields in spec.compare]  # type: ignore[arg-type]
    except (ValidationError, ValueError, TypeError) as exc:
        raise ExampleError(str(exc)) from exc
    result = plan(request)
    if result.best is None:
        raise ExampleError("no layout fits: the example has nothing to show")
    # The planner page's query fields (app.calc.planner_query.PlannerQuery).
    link = "/calculators/planner?" + urlencode({
        "preset": spec.model, "gpu": spec.accelerator, "gpus_per_node": spec.gpus_per_node,
        "nodes": spec.nodes, "intra_node": spec.intra_node, "inter_node": spec.inter_node,
        "global_batch_tokens": spec.global_batch_tokens, "seq_len": spec.seq_len,
        "token_budget": spec.token_budget,
    })  # fmt: skip
    table = templates.get_template("cards/_planner_example.html").render(
        plan=result,
        why_nots=[why_not(result, lay) for lay in compared],
        link=link,
        step_labels=STEP_LABELS,  # the planner page's names for the step's terms
    )
    return f'<div class="worked-example">{table}</div>\n'


def _query_string(values: dict[str, object]) -> bytes:
    encoded = {k: str(v).lower() if isinstance(v, bool) else v for k, v in values.items()}
    return urlencode(encoded).encode()


def calculator_example(router_module: str, name: str) -> Callable[[str], str]:
    """Renders a calculator's result fragment for the block's inputs, via its page's own view."""

    def render(body: str) -> str:
        module = importlib.import_module(f"app.calculators.{router_module}")
        request = Request(
            {
                "type": "http",
                "method": "GET",
                "path": "/",
                "headers": [],
                "query_string": _query_string(_inputs(body)),
            }  # fmt: skip
        )
        context, status = module.page_context(request)
        if status != 200:
            raise ExampleError("; ".join(map(str, context.get("errors", []))) or "bad inputs")
        fragment = templates.get_template(f"calculators/_{name}_result.html").render(
            {**context, "request": request}
        )
        # Escaped: a bare "&micro_batch" in an attribute is the character reference µ to a
        # browser, which then asks for "seq_len=4096µ_batch=1".
        link = escape(context["share_url"])
        label = escape(gettext("Open these numbers in the calculator →"))
        return f'<div class="worked-example">{fragment}<p><a href="{link}">{label}</a></p></div>\n'

    return render


EXAMPLES: dict[str, Callable[[str], str]] = {
    "memory": memory_example,
    "planner": planner_example,
    "training-memory": calculator_example("training_router", "training"),
    "communication": calculator_example("communication_router", "communication"),
    "pipeline": calculator_example("pipeline_router", "pipeline"),
    "compute": calculator_example("compute_router", "compute"),
    "roofline": calculator_example("roofline_router", "roofline"),
    "inference-memory": calculator_example("inference_router", "inference"),
    "failures": calculator_example("failures_router", "failures"),
}


def render_example(kind: str, body: str) -> str:
    if kind not in EXAMPLES:
        raise ExampleError(f"unknown example kind {kind!r}; known: {sorted(EXAMPLES)}")
    return EXAMPLES[kind](body)


def _written(body: str, field: str) -> str:
    """`field: value` as the block writes it (7.5e9, not 7500000000.0); the field alone where
    its value spans several lines."""
    line = re.search(rf"^{re.escape(field)}:[ \t]*(\S.*?)[ \t]*$", body, re.M)
    return f"{field}: {line.group(1)}" if line else field


def folded_example(kind: str, body: str, earlier: list[tuple[str, str]]) -> str:
    """A worked example after a card's first (`earlier` holds the card's examples before it, as
    (kind, body)), closed under a summary that names it: its calculator and the inputs that set
    it apart from the card's first example of that calculator (every input where it is the
    first). The page stays short and nothing is lost: a chart inside draws while closed and
    takes its box's width when opened (static/js/chart-resize.js)."""
    fragment = render_example(kind, body)
    mine = _inputs(body)
    first = next((_inputs(b) for k, b in earlier if k == kind), {})
    changed = [_written(body, f) for f, v in mine.items() if f not in first or first[f] != v]
    if changed:
        label = gettext("Another worked example: %(calculator)s with %(inputs)s")
    else:
        label = gettext("Another worked example: %(calculator)s")
    summary = Markup.escape(label) % {
        "calculator": gettext(CALCULATOR_PAGES[kind][0]),
        "inputs": Markup(", ").join(Markup("<code>%s</code>") % text for text in changed),
    }
    return f'<details class="more-example">\n<summary>{summary}</summary>\n{fragment}</details>\n'
