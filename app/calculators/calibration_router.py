"""Calibrating the layout planner to one's own runs: the planner page's form posts a runs file
here and gets the fitted profile back as a fragment, an example runs file to start from, and
the same fit as a JSON API. The bounds are app.calculators.calibration_view's."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field
from starlette.datastructures import UploadFile

from app.calc.calibration import Calibration
from app.calc.commands.calibrate import report_data
from app.calc.messages import Message, words_of
from app.calc.planner_fields import LABELS
from app.calc.planner_query import PlannerQuery
from app.calc.query_config import QUERY_CONFIG
from app.calculators.calibration_view import (
    EXAMPLE_CSV,
    MAX_CROSS_VALIDATED_RUNS,
    MAX_RUNS,
    MAX_TEXT_BYTES,
    MIN_CROSS_VALIDATED_RUNS,
    CalibratorBusy,
    calibrate,
    decode_runs,
    parameter_rows,
    parse_runs,
    profile_json,
    runs_kind,
)
from app.calculators.communication_view import seconds
from app.calculators.planner_router import PAGE, planner_context, shareable_url
from app.errors import is_htmx
from app.formatting import memory
from app.forms import SubmittedForm, parse_form
from app.i18n import N_, say
from app.ratelimit import count_calibration
from app.route_guards import GuardedRoute
from app.templating import templates

router = APIRouter(route_class=GuardedRoute)


class CalibrationRequest(BaseModel):
    model_config = QUERY_CONFIG

    runs: list[dict[str, Any]] | None = Field(
        default=None,
        description="the runs, each an object with a runs file's fields (model or its shape, "
        "cluster, seq_len, global_batch_tokens or global_batch_sequences, the layout, step_s "
        "or tokens_per_s_per_gpu, optionally peak_memory_gb)",
    )
    csv: str | None = Field(default=None, description="or a CSV runs file's text, header first")
    cross_validate: bool = Field(
        default=True,
        description=f"leave-one-out cross-validation, for {MIN_CROSS_VALIDATED_RUNS} to "
        f"{MAX_CROSS_VALIDATED_RUNS} runs",
    )


class CalibrationRunOut(BaseModel):
    name: str
    measured_step_s: float
    predicted_step_s: float = Field(description="with the fitted profile")
    held_out_step_s: float | None = Field(
        description="predicted by the profile fitted to the other runs (leave-one-out)"
    )
    measured_memory_bytes: float | None
    predicted_memory_bytes: float


class CalibrationResult(BaseModel):
    profile: dict[str, float | str] = Field(description="the fitted parameters and its name")
    profile_json: str = Field(
        description="the fitted profile as `python -m app.calc calibrate --out` writes it: "
        "give it as the planner's `profile`"
    )
    free: list[str] = Field(description="the parameters the fit moved")
    runs: list[CalibrationRunOut]
    mean_error: float = Field(description="mean |predicted / measured - 1| with the fit")
    worst_error: float
    held_out_mean_error: float | None = Field(description="the same, each run left out")
    held_out_worst_error: float | None
    memory_mean_error: float | None = Field(description="over the runs that give peak memory")
    cross_validated: bool


def calibration_result(calibration: Calibration) -> CalibrationResult:
    return CalibrationResult.model_validate(
        report_data(calibration)
        | {
            "profile_json": calibration.profile.to_json(),
            "cross_validated": _cross_validated(calibration),
        }
    )


def _cross_validated(calibration: Calibration) -> bool:
    return any(r.held_out_step_s is not None for r in calibration.report.residuals)


@router.get(f"{PAGE}/calibration-example.csv", include_in_schema=False)
def calibration_example() -> Response:
    return Response(
        EXAMPLE_CSV,
        media_type="text/csv",
        headers={"Content-Disposition": 'attachment; filename="shardlab-runs-example.csv"'},
    )


async def uploaded_runs(form: SubmittedForm) -> tuple[str, bytes] | None:
    """The chosen runs file's name and bytes, at most one past the limit, which is enough to
    tell it is too big; None when no file was chosen. Read here, on the event loop, so that
    the fit runs in the thread pool (app.forms.submitted_form)."""
    upload = form.get("runs_file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return None
    return upload.filename, await upload.read(MAX_TEXT_BYTES + 1)


def _plan_url(form: SubmittedForm, calibration: Calibration) -> str:
    """The planner with the inputs its form holds (sent along with the runs) and this profile;
    the defaults where they do not make a valid query."""
    inputs = {k: v for k, v in form.items() if k in PlannerQuery.model_fields and k != "profile"}
    query, _ = parse_form(PlannerQuery, inputs, LABELS)
    query = query or PlannerQuery()
    return shareable_url(query.model_copy(update={"profile": profile_json(calibration.profile)}))


def _render(request: Request, context: dict[str, object], status: int) -> HTMLResponse:
    """The fragment for htmx; without script, the planner page with the fit below its form."""
    if is_htmx(request):
        return templates.TemplateResponse(
            request, "calculators/_planner_calibration.html", context, status_code=status
        )
    page, _ = planner_context(request)
    return templates.TemplateResponse(
        request, "calculators/planner.html", {**page, **context}, status_code=status
    )


def _refused(request: Request, problem: str, status: int = 422) -> HTMLResponse:
    return _render(request, {"calibration_error": say(problem)}, status)


@router.post(
    f"{PAGE}/calibrate",
    response_class=HTMLResponse,
    include_in_schema=False,
    dependencies=[Depends(count_calibration)],
)
def calibrate_page(
    request: Request,
    form: SubmittedForm,
    upload: Annotated[tuple[str, bytes] | None, Depends(uploaded_runs)],
) -> HTMLResponse:
    pasted = form.get("runs_text")
    try:
        if upload is not None:
            filename, raw = upload
            text, kind = decode_runs(raw), runs_kind(filename)
        elif isinstance(pasted, str) and pasted.strip():
            text, kind = pasted, None
        else:
            return _refused(request, Message(N_("choose a runs file or paste one")))
        runs = parse_runs(text, kind)
        calibration = calibrate(runs)
    except ValueError as exc:
        return _refused(request, words_of(exc))
    except CalibratorBusy as exc:
        return _refused(request, Message(exc.message), 503)
    report = calibration.report
    context = {
        "calibration": calibration,
        "report": report,
        "parameters": parameter_rows(calibration),
        "cross_validated": _cross_validated(calibration),
        "has_memory": any(r.measured_memory_bytes is not None for r in report.residuals),
        "plan_url": _plan_url(form, calibration),
        "profile_text": calibration.profile.to_json(),
        "bounds": {"min": MIN_CROSS_VALIDATED_RUNS, "max": MAX_CROSS_VALIDATED_RUNS},
        "fmt": {"seconds": seconds, "memory": memory},
    }
    return _render(request, context, 200)


@router.post("/api/calc/calibrate", response_model=CalibrationResult, tags=["calculators"],
             dependencies=[Depends(count_calibration)])  # fmt: skip
def calibrate_api(body: CalibrationRequest) -> CalibrationResult:
    """Fits the planner's performance profile (app.calc.performance) to measured runs.

    Give the runs as `runs`, a list of objects with a JSON runs file's fields, or as `csv`,
    a CSV runs file's text: per run the model (a preset name in `model`, or its shape), the
    cluster (gpu, gpus_per_node, nodes, intra_node, inter_node), seq_len and
    global_batch_tokens (or global_batch_sequences), the layout (dp, tp, pp, cp, ep,
    zero_stage, distributed_optimizer, recompute, micro_batch, schedule, virtual_stages), the
    measured step_s (or tokens_per_s_per_gpu) and, optionally, peak_memory_gb. A least-squares
    fit on log step time keeps each parameter inside its physical bounds
    (app.calc.calibration); runs with peak memory fit the memory parameters too. Returns each
    run's measured and predicted step, each run predicted by the profile fitted without it
    (leave-one-out, 3 to 10 runs), and the profile's JSON, which the planner takes as
    `profile` (GET /api/calc/planner?profile=...). At most 50 runs and 200 kB; 422 says what
    is wrong with a run, naming it and the field.
    """
    if (body.runs is None) == (body.csv is None):
        raise HTTPException(
            422, "give the runs either as `runs` (a list of runs) or as `csv` (a CSV's text)"
        )
    if body.runs is not None:
        if len(body.runs) > MAX_RUNS:
            raise HTTPException(
                422, f"at most {MAX_RUNS} runs can be calibrated at once, got {len(body.runs)}"
            )
        text, kind = json.dumps({"runs": body.runs}), "json"
    else:
        text, kind = str(body.csv), "csv"
    try:
        runs = parse_runs(text, kind)
        calibration = calibrate(runs, cross_validate=body.cross_validate)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    except CalibratorBusy as exc:
        raise HTTPException(503, exc.message, headers={"Retry-After": "5"}) from None
    return calibration_result(calibration)
