"""The single-tensor all-gather and reduce-scatter under the name this torch gives them.

torch 2.13 (the version ShardLab pins) calls them `all_gather_single` and
`reduce_scatter_single` and deprecates the older `all_gather_into_tensor` and
`reduce_scatter_tensor` with a FutureWarning; torch 2.11, which the lent GPU machines carry
(bench/gpu_session.sh), has only the older names. Both run the same c10d ops
(`_allgather_base_`, `_reduce_scatter_base_`), so the counter and the Flight Recorder see
the same thing either way.
"""

from __future__ import annotations

import torch.distributed as dist

all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
