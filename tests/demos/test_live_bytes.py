"""LiveBytesTrace on a few ops whose bytes are known by hand (no process group needed)."""

from __future__ import annotations

import torch

from demos.live_bytes import LiveBytesTrace


def test_views_cost_nothing_and_freed_storages_leave_the_count() -> None:
    x = torch.ones(4, 8)  # 128 B, tracked from the start
    weight = torch.ones(8, 8)  # excluded, like a parameter
    trace = LiveBytesTrace(track=[x], exclude=[weight])
    with trace:
        trace.mark("work")
        y = x @ weight.t()  # +128 B; the transpose is a view of an excluded storage
        z = y.view(32)  # a view: +0
        del y, z
        w = x * 2  # y's storage is gone: -128 B, +128 B
    assert [(op, live) for _, op, live in trace.timeline()] == [
        ("track", 128),
        ("t", 128),
        ("mm", 256),
        ("view", 256),
        ("mul", 256),
    ]
    peak = trace.peak(["work"], leave_out=trace.live_ids([w]))
    assert (peak.bytes_, peak.op) == (256, "mm")  # w left out; y counted while it lived
