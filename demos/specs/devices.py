"""What a worker's device and backend allow a demo: which collectives gloo runs on CUDA tensors,
and the bounds a spec sets per device. Torch-free, so the app refuses before the worker does.

Gloo on CUDA tensors (torch 2.13). The torch docs' "Backends" table, unchanged since 2.3, marks
only broadcast and all_reduce; the 2.13 build has more. Evidence, per collective:
- libtorch_cpu.so of the 2.13 wheel holds a CUDA work class for broadcast, reduce, all_gather,
  gather, scatter and all_to_all (`strings libtorch_cpu.so | grep CUDAWork`: AsyncBroadcast-,
  AsyncReduce-, AsyncAllgather-, AsyncGather-, AsyncScatter-, AsyncAlltoall(List)CUDAWork);
- all_reduce's CUDA work registers itself from libtorch_cuda (GlooAllreduceRegistry, declared
  in the wheel's ProcessGroupGlooDetail.hpp; defined in ProcessGroupGlooCuda.cpp);
- reduce_scatter_tensor is an all-reduce of a copy, then a chunk (ProcessGroupGloo.cpp,
  reduce_scatter_tensor_coalesced), so it runs wherever all_reduce does;
- send and recv have no CUDA work (gloo's TCP pairs read host memory), nor has
  allreduce_coalesced ("unsupported device type"), which DDP and the demos do not use.
bench/gpu_check.py on a GPU box is where this table meets a real run; untested on GPU as of
2026-11-25.
"""

from __future__ import annotations

from pydantic import BaseModel

from app.calc.messages import N_, Message

GLOO_ON_CUDA: dict[str, bool] = {
    "all_reduce": True,
    "broadcast": True,
    "reduce": True,
    "all_gather": True,
    "gather": True,
    "scatter": True,
    "all_to_all": True,
    "reduce_scatter": True,
    "send": False,
    "recv": False,
}


def unsupported_collectives(collectives: tuple[str, ...], backend: str, device: str) -> list[str]:
    """The collectives of a demo this backend cannot run on this device's tensors."""
    if backend != "gloo" or device != "cuda":
        return []
    return [kind for kind in collectives if not GLOO_ON_CUDA.get(kind, False)]


def refusal(demo: str, collectives: tuple[str, ...], backend: str, device: str) -> Message | None:
    """Why the worker will not run `demo` with this backend on this device, or None."""
    missing = unsupported_collectives(collectives, backend, device)
    if not missing:
        return None
    template = N_(
        "%(demo)s needs %(collectives)s on CUDA tensors, which gloo cannot run; "
        "start the worker with --backend nccl (one GPU per rank) or --device cpu"
    )
    return Message(template, demo=demo, collectives=", ".join(missing))


def job_problem(
    demo: str, collectives: tuple[str, ...], params: BaseModel, backend: str, device: str
) -> Message | None:
    """Why this job cannot run on a worker of this backend and device, or None.

    A spec whose bounds depend on the device (a model that fits a GPU but would take minutes on
    CPU cores) defines `device_problem(device) -> Message | None` on its params model: a Message
    (app.calc.messages), so the run panel says it in the reader's language.
    """
    device_problem = getattr(params, "device_problem", None)
    found = device_problem(device) if device_problem is not None else None
    return found or refusal(demo, collectives, backend, device)
