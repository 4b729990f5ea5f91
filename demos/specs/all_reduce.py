"""Parameters of the all-reduce demo."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from demos.specs._units import FLOAT32_BYTES, MIB


class AllReduceParams(BaseModel):
    """One float32 buffer all-reduced (sum) a few times across every rank of the worker."""

    model_config = ConfigDict(extra="forbid")

    size_mib: Annotated[
        float, Field(gt=0, le=64, description="Buffer size per rank in MiB (at most 64).")
    ] = 4.0
    iterations: Annotated[
        int, Field(ge=1, le=20, description="How many all-reduces to run (1 to 20).")
    ] = 5

    @property
    def elements(self) -> int:
        return max(1, round(self.size_mib * MIB / FLOAT32_BYTES))

    @property
    def payload_bytes(self) -> int:
        return self.elements * FLOAT32_BYTES


PARAMS = AllReduceParams
COLLECTIVES = ("all_reduce",)
# One rank all-reduces with itself: zero bytes, nothing to measure.
MIN_RANKS = 2
