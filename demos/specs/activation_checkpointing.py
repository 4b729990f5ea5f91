"""Parameters of the activation-checkpointing demo."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.calc.messages import N_, Message

HIDDEN_MULTIPLE = 4  # each block's hidden width is 4 x width, as in a transformer MLP


class ActivationCheckpointingParams(BaseModel):
    """A stack of residual MLP blocks, trained one step at a time with and without recompute.

    The bounds keep one fp32 step without recompute under about 40 MB of saved activations
    (8 x 512 x (256 + 2 x 1024) x 4 B) and well under a second on one core.
    """

    model_config = ConfigDict(extra="forbid")

    layers: Annotated[
        int, Field(ge=1, le=8, description="Residual MLP blocks in the stack (1 to 8).")
    ] = 8
    width: Annotated[
        int, Field(ge=8, le=256, description="Width of each block's input (8 to 256).")
    ] = 128
    tokens: Annotated[
        int, Field(ge=1, le=512, description="Rows of one batch, batch x sequence (1 to 512).")
    ] = 256
    segment_layers: Annotated[
        int,
        Field(
            ge=1,
            le=8,
            description="Blocks per checkpointed segment in the third run (1 to 8, at most "
            "the number of blocks).",
        ),
    ] = 4
    steps: Annotated[
        int, Field(ge=1, le=5, description="Measured steps of each mode (1 to 5).")
    ] = 3

    @model_validator(mode="after")
    def _segment_fits(self) -> ActivationCheckpointingParams:
        if self.segment_layers > self.layers:
            template = N_(
                "a segment of %(segment)s blocks is longer than the %(layers)s-block stack"
            )
            raise ValueError(Message(template, segment=self.segment_layers, layers=self.layers))
        return self

    @property
    def hidden_width(self) -> int:
        return HIDDEN_MULTIPLE * self.width

    @property
    def modes(self) -> tuple[tuple[str, int | None], ...]:
        """(mode name, blocks per checkpointed segment or None), in the order they run."""
        modes: list[tuple[str, int | None]] = [("none", None), ("every layer", 1)]
        if self.segment_layers > 1:
            modes.append((f"every {self.segment_layers} layers", self.segment_layers))
        return tuple(modes)


PARAMS = ActivationCheckpointingParams
COLLECTIVES: tuple[str, ...] = ()  # every rank trains alone
