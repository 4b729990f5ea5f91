"""Parameters of the collectives demo: a sweep of buffer sizes, each collective a few times."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from demos.specs._units import FLOAT32_BYTES, MIB

KINDS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all")
SIZE_STEP = 4  # each size is a quarter of the next


class CollectivesParams(BaseModel):
    """Five collectives over a sweep of float32 buffer sizes on every rank of the worker."""

    model_config = ConfigDict(extra="forbid")

    # 16 MiB keeps a rank's buffers under ~100 MB and a whole job a few seconds at 4 ranks.
    max_size_mib: Annotated[
        float, Field(gt=0, le=16, description="Largest buffer S in MiB (at most 16).")
    ] = 4.0
    sizes: Annotated[
        int, Field(ge=1, le=6, description="Sizes swept, each a quarter of the next (1 to 6).")
    ] = 4
    iterations: Annotated[
        int, Field(ge=1, le=10, description="Runs of each collective at each size (1 to 10).")
    ] = 5

    def payload_bytes(self, world_size: int) -> list[int]:
        """The sizes S swept, smallest first: float32 elements, a multiple of the ranks."""
        sizes = set()
        for step in range(self.sizes):
            elements = int(self.max_size_mib * MIB / FLOAT32_BYTES / SIZE_STEP**step)
            sizes.add(max(1, elements // world_size) * world_size * FLOAT32_BYTES)
        return sorted(sizes)


# The worker's summary and the page's live chart both time a row this way (no torch here).
def run_times_s(ranks: list[dict[str, Any]]) -> tuple[list[list[float]], str]:
    """Per rank, the runs' times, and where they came from: the backend's own record on every
    rank ("recorded"), or else the wall clock around each clean run ("wall")."""
    if all(row.get("recorded_times_s") for row in ranks):
        return [row["recorded_times_s"] for row in ranks], "recorded"
    return [row["times_s"] for row in ranks], "wall"


PARAMS = CollectivesParams
COLLECTIVES = KINDS
# One rank's collectives move zero bytes: nothing to measure.
MIN_RANKS = 2
