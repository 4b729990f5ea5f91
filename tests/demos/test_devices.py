"""Which demos a worker's backend and device allow, from demos/specs/devices.py (no torch)."""

from __future__ import annotations

import pytest

from demos.specs import DEMO_COLLECTIVES, DEMO_PARAMS
from demos.specs.devices import GLOO_ON_CUDA, job_problem, refusal, unsupported_collectives


def _problem(demo: str, backend: str, device: str, **params: object) -> str | None:
    spec = DEMO_PARAMS[demo].model_validate(params)
    return job_problem(demo, DEMO_COLLECTIVES[demo], spec, backend, device)


def test_gloo_on_cuda_refuses_only_the_pipeline_and_names_its_collectives() -> None:
    refused = {demo for demo in DEMO_PARAMS if _problem(demo, "gloo", "cuda") is not None}
    assert refused == {"pipeline_schedules"}
    message = _problem("pipeline_schedules", "gloo", "cuda")
    assert message is not None
    assert message.startswith("pipeline_schedules needs send, recv on CUDA tensors")


@pytest.mark.parametrize(("backend", "device"), [("gloo", "cpu"), ("nccl", "cuda")])
def test_other_pairings_refuse_nothing(backend: str, device: str) -> None:
    assert all(_problem(demo, backend, device) is None for demo in DEMO_PARAMS)


def test_the_table_drives_the_choice() -> None:
    assert unsupported_collectives(("all_reduce", "send", "gather"), "gloo", "cuda") == ["send"]
    # A collective the table does not know is refused, never tried.
    assert unsupported_collectives(("all_reduce_coalesced",), "gloo", "cuda") == [
        "all_reduce_coalesced"
    ]
    assert refusal("x", ("broadcast", "all_reduce"), "gloo", "cuda") is None
    assert GLOO_ON_CUDA["all_reduce"] and GLOO_ON_CUDA["broadcast"]
    assert not GLOO_ON_CUDA["send"] and not GLOO_ON_CUDA["recv"]


def test_every_demo_declares_collectives_the_table_knows() -> None:
    for demo, collectives in DEMO_COLLECTIVES.items():
        assert set(collectives) <= set(GLOO_ON_CUDA), demo


def test_a_zero_model_scale_above_one_needs_cuda() -> None:
    assert _problem("zero_stages", "gloo", "cpu", model_scale=1) is None
    message = _problem("zero_stages", "gloo", "cpu", model_scale=2)
    assert message == (
        "model scale 2 needs CUDA ranks; this worker runs on cpu, where the scale is at most 1"
    )
    assert _problem("zero_stages", "nccl", "cuda", model_scale=8) is None
