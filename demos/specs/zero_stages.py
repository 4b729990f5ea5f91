"""Parameters of the DDP vs ZeRO-1/2/3 demo, and the shapes of the model it trains.

The shapes live here, torch-free, so the web app can predict every byte from them; the demo
builds its torch model from the same numbers and checks its parameters have these shapes.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.calc.messages import N_, Message

HEADS = 4
MLP_RATIO = 4
# The width is multiplied by the model scale. At the largest (width 128 x 8 = 1024, 4 layers,
# vocabulary 1024) the model has 52.5 M parameters: 210 MB of fp32 weights and 840 MB of DDP's
# model states per rank, which a GPU steps in milliseconds; two CPU ranks would take minutes,
# so on CPU the scale stays 1 and the model within the bounds below.
MODEL_SCALES = (1, 2, 4, 8)
MAX_MODEL_SCALE = {"cpu": 1, "cuda": 8}

Shape = tuple[int, ...]


class ZeroStagesParams(BaseModel):
    """A tiny GPT-style transformer trained with Adam (fp32) under four strategies."""

    model_config = ConfigDict(extra="forbid")

    width: Annotated[
        int,
        Field(
            ge=16,
            le=128,
            multiple_of=HEADS,
            description=f"Model width d (16 to 128, a multiple of the {HEADS} heads).",
        ),
    ] = 64
    layers: Annotated[int, Field(ge=1, le=4, description="Transformer blocks (1 to 4).")] = 2
    vocab: Annotated[
        int,
        Field(
            ge=8,
            le=1024,
            description="Vocabulary size (8 to 1024); a size the ranks do not divide "
            "shows FSDP's padding.",
        ),
    ] = 250
    seq_len: Annotated[int, Field(ge=4, le=64, description="Tokens per sequence (4 to 64).")] = 32
    batch: Annotated[
        int, Field(ge=1, le=8, description="Sequences per rank per step (1 to 8).")
    ] = 4
    steps: Annotated[
        int,
        Field(
            ge=3,
            le=6,
            description="Rows per strategy (3 to 6), each a clean timed Adam step then a "
            "counted one: DDP's second step (row 0's counted one) rebuilds its buckets.",
        ),
    ] = 3
    bucket_cap_mb: Annotated[
        float,
        Field(
            gt=0,
            le=25,
            description="DDP's gradient bucket size in MB (at most 25, DDP's default).",
        ),
    ] = 25.0

    model_scale: Annotated[
        int,
        Field(
            ge=1,
            le=max(MODEL_SCALES),
            description="Multiplies the width (1, 2, 4 or 8); above 1 only on CUDA ranks.",
        ),
    ] = 1

    @field_validator("model_scale")
    @classmethod
    def _one_of_the_scales(cls, scale: int) -> int:
        if scale not in MODEL_SCALES:
            scales = ", ".join(map(str, MODEL_SCALES))
            raise ValueError(Message(N_("must be one of %(scales)s"), scales=scales))
        return scale

    @property
    def d_model(self) -> int:
        """The width the model is built with."""
        return self.width * self.model_scale

    def device_problem(self, device: str) -> Message | None:
        """Why a worker on `device` ("cpu" or "cuda") refuses this model size, or None."""
        most = MAX_MODEL_SCALE.get(device, 1)
        if self.model_scale > most:
            template = N_(
                "model scale %(scale)s needs CUDA ranks; this worker runs on %(device)s, "
                "where the scale is at most %(most)s"
            )
            return Message(template, scale=self.model_scale, device=device, most=most)
        return None

    def block_shapes(self) -> list[Shape]:
        """One transformer block's parameters, in registration order."""
        d, h = self.d_model, MLP_RATIO * self.d_model
        return [
            (d,), (d,),  # ln1 weight, bias
            (3 * d, d), (3 * d,),  # qkv
            (d, d), (d,),  # attention output projection
            (d,), (d,),  # ln2
            (h, d), (h,),  # mlp up
            (d, h), (d,),  # mlp down
        ]  # fmt: skip

    def root_shapes(self) -> list[Shape]:
        """Parameters outside the blocks: embeddings, final norm, output head (untied)."""
        d = self.d_model
        return [(self.vocab, d), (self.seq_len, d), (d,), (d,), (self.vocab, d)]

    def shape_groups(self) -> list[list[Shape]]:
        """Parameters by FSDP unit: one per block, then the root module's own."""
        return [self.block_shapes() for _ in range(self.layers)] + [self.root_shapes()]

    def shapes(self) -> list[Shape]:
        """Every parameter, in the model's registration order (root's embeddings first)."""
        root = self.root_shapes()
        blocks = [shape for _ in range(self.layers) for shape in self.block_shapes()]
        return root[:2] + blocks + root[2:]


PARAMS = ZeroStagesParams
# DDP all-reduces and broadcasts; ZeroRedundancyOptimizer broadcasts; FSDP2 all-gathers
# and reduce-scatters.
COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "reduce_scatter")
