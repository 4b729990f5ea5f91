"""Parameters of the mixed-precision demo."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# Values every rank casts to fp16 and bf16 in the range check: around fp16's top (65504, the
# halfway point 65520) and bottom (2^-24, its half 2^-25), a few ordinary numbers, and some
# beyond fp16's range. They start as an fp32 tensor, so 0.1, 1e-10 and 3e38 are first rounded
# to fp32; the prediction (app.calc.float_formats.round_to_format) rounds them the same way.
RANGE_PROBES: tuple[float, ...] = (
    65504.0,
    65519.0,
    65520.0,
    1.0e5,
    3.0e38,
    2.0**-14,
    2.0**-24,
    3 * 2.0**-26,
    2.0**-25,
    1e-10,
    1.0 + 2.0**-9,
    3.140625,
    0.1,
)


class MixedPrecisionParams(BaseModel):
    """One linear layer's gradients in fp32, fp16, fp16 with loss scaling, and bf16.

    The loss is 2^-k * sum(w * x) with x spread log-uniformly from 2^-spread to 1, so the true
    gradients span 2^-(k + spread) .. 2^-k: a loss averaged over 2^k tokens has gradients
    this small.
    """

    model_config = ConfigDict(extra="forbid")

    # Not `elements`: a form field of that name hides the form's own `elements` list from htmx.
    gradients: Annotated[
        int, Field(ge=16, le=1_048_576, description="Gradient elements per rank (16 to 2^20).")
    ] = 65_536
    loss_weight_exponent: Annotated[
        int,
        Field(ge=0, le=24, description="k: the loss is weighted by 2^-k (0 to 24)."),
    ] = 16
    spread_exponent: Annotated[
        int,
        Field(ge=1, le=14, description="Inputs spread from 2^-spread to 1 (1 to 14)."),
    ] = 14
    loss_scale_exponent: Annotated[
        int,
        Field(ge=0, le=32, description="s: the fp16 run's loss scale is 2^s (0 to 32)."),
    ] = 16

    @property
    def low_log2(self) -> int:
        """log2 of the smallest true gradient magnitude."""
        return -self.loss_weight_exponent - self.spread_exponent

    @property
    def high_log2(self) -> int:
        return -self.loss_weight_exponent


PARAMS = MixedPrecisionParams
COLLECTIVES = ("all_reduce",)
