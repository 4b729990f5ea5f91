"""Parameters of the tensor-parallel demo: one block's shape, its split, and how often to run it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.calc.messages import N_, Message
from demos.specs._units import FLOAT32_BYTES

LAYOUTS = ("mlp_column_row", "mlp_row_column", "attention_heads")
# Bounds keep a step under 0.6 s and a job under 12 s at 4 ranks on 2 cores (measured), and a
# rank under ~100 MB: the widest block is 1024 tokens x 512 x 2048 float32 (4 MiB per weight).
MAX_TOKENS = 1024


class TensorParallelParams(BaseModel):
    """A block run split over every rank and, for the check, whole on each rank."""

    model_config = ConfigDict(extra="forbid")

    layout: Annotated[
        Literal["all", "mlp_column_row", "mlp_row_column", "attention_heads"],
        Field(description="Which split to run; 'all' runs the three one after the other."),
    ] = "all"
    hidden: Annotated[
        int,
        Field(ge=8, le=512, description="Hidden size h (8 to 512); the worker's N must divide it."),
    ] = 256
    ffn_multiple: Annotated[
        int, Field(ge=1, le=4, description="MLP width as a multiple of h (1 to 4).")
    ] = 4
    batch: Annotated[int, Field(ge=1, le=16, description="Sequences per step (1 to 16).")] = 4
    seq_len: Annotated[int, Field(ge=1, le=256, description="Tokens per sequence (1 to 256).")] = 16
    heads: Annotated[
        int,
        Field(ge=1, le=16, description="Attention heads (1 to 16); divide h, and N divides them."),
    ] = 4
    iterations: Annotated[int, Field(ge=1, le=3, description="Steps per split (1 to 3).")] = 2

    @model_validator(mode="after")
    def _shapes_fit(self) -> TensorParallelParams:
        if self.tokens > MAX_TOKENS:
            template = N_("batch × seq_len must be at most %(most)s tokens")
            raise ValueError(Message(template, most=MAX_TOKENS))
        if self.hidden % self.heads:
            template = N_("heads (%(heads)s) must divide hidden (%(hidden)s)")
            raise ValueError(Message(template, heads=self.heads, hidden=self.hidden))
        return self

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    @property
    def ffn_hidden(self) -> int:
        return self.hidden * self.ffn_multiple

    @property
    def layouts(self) -> tuple[str, ...]:
        return LAYOUTS if self.layout == "all" else (self.layout,)

    @property
    def dtype_bytes(self) -> int:
        return FLOAT32_BYTES

    def problem_with(self, world_size: int) -> Message | None:
        """Why these shapes cannot be split over `world_size` ranks, or None."""
        if self.hidden % world_size:
            template = N_("hidden size %(hidden)s is not divisible by the worker's %(ranks)s ranks")
            return Message(template, hidden=self.hidden, ranks=world_size)
        if "attention_heads" in self.layouts and self.heads % world_size:
            template = N_(
                "%(heads)s heads cannot be split over the worker's %(ranks)s ranks; "
                "choose a multiple of it"
            )
            return Message(template, heads=self.heads, ranks=world_size)
        return None


PARAMS = TensorParallelParams
COLLECTIVES = ("all_reduce", "all_gather")
# One rank holds the whole block: its collectives move zero bytes.
MIN_RANKS = 2
