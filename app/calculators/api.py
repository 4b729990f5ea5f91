"""The calculators as a JSON API, documented in the OpenAPI schema at /docs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.calculators.memory_view import memory_result
from app.calculators.schemas import MemoryQuery, MemoryResult

router = APIRouter(prefix="/api/calc", tags=["calculators"])


@router.get("/memory", response_model=MemoryResult)
def memory(query: Annotated[MemoryQuery, Query()]) -> MemoryResult:
    """Model-states memory per GPU for ZeRO stages 0-3 (mixed-precision Adam).

    Bytes of weights, gradients and optimizer states each GPU holds, sharded over the
    data-parallel degree as in the ZeRO paper (arXiv:1910.02054, Section 5.1, Figure 1).
    Model states only: no activations, buffers or fragmentation.
    """
    return memory_result(query)
