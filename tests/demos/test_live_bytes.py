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


def test_a_storage_written_in_place_before_being_seen_counts_from_the_start() -> None:
    bucket = torch.zeros(16)  # 64 B made before the trace, like DDP's gradient buckets
    grad = torch.ones(16)
    trace = LiveBytesTrace(track=[grad])
    with trace:
        trace.mark("backward")
        torch.mul(grad, 0.5, out=bucket)  # what DDP's reducer does to its bucket
        view = bucket.view(4, 4)  # a view of a storage already seen: +0
    ids = trace.live_ids([bucket])
    assert [trace.existed(id_) for id_ in ids] == [True]
    assert [live for _, _, live in trace.timeline()] == [128, 128, 128]
    assert view.untyped_storage().nbytes() == 64


def test_a_storage_first_seen_through_a_view_counts_from_that_op() -> None:
    made_unseen = torch.ones(8)  # as a kernel's own buffer: never an op's output in the trace
    trace = LiveBytesTrace()
    with trace:
        trace.mark("backward")
        halves = made_unseen.split(4)
    (id_,) = trace.live_ids([made_unseen])
    assert not trace.existed(id_)
    assert trace.born_in(id_) == "backward"
    assert [live for _, _, live in trace.timeline()] == [0, 32]
    assert len(halves) == 2


def test_resizable_storages_are_counted_at_their_size_after_every_op() -> None:
    gathered = torch.empty(32)  # FSDP2 frees a gathered layer by resizing its storage to 0
    gathered.untyped_storage().resize_(0)
    x = torch.ones(4)
    trace = LiveBytesTrace(track=[x], resizable=[gathered])
    with trace:
        trace.mark("forward")
        gathered.untyped_storage().resize_(128)  # not an op: the next op notices it
        y = x + 1
        gathered.untyped_storage().resize_(0)
        z = y * 2
    assert [(op, live) for _, op, live in trace.timeline()] == [
        ("track", 16),
        ("add", 16 + 128 + 16),
        ("mul", 16 + 16 + 16),
    ]
    peak = trace.peak(["forward"])
    (gathered_id,) = trace.live_ids([gathered])
    assert trace.alive_after(peak.index)[gathered_id] == 128
    assert z.numel() == 4


def test_what_dies_between_ops_leaves_with_its_phase() -> None:
    x = torch.ones(4)  # 16 B
    trace = LiveBytesTrace(track=[x])
    with trace:
        trace.mark("forward")
        total = (x * 2).sum()  # the product (16 B) dies when sum returns: between two ops
        trace.mark("backward")
        y = total + 1
    assert [(label, op, live) for label, op, live in trace.timeline()] == [
        ("start", "track", 16),
        ("forward", "mul", 32),
        ("forward", "sum", 36),
        ("forward", "(end of phase)", 20),  # not charged to backward's first op
        ("backward", "add", 24),
    ]
    assert y.item() == 9.0


def test_storages_born_inside_a_named_record_function_scope_say_so() -> None:
    x = torch.ones(4)
    trace = LiveBytesTrace(track=[x], scopes=("FSDP::",))
    with trace:
        trace.mark("backward")
        with torch.profiler.record_function("FSDP::post_backward_reduce (blocks.0)"):
            buffer = x * 2  # like FSDP2's reduce-scatter input
        with torch.profiler.record_function("DistributedDataParallel.forward"):
            other = x + 1  # a scope the trace was not asked about
        after = x - 1
    (buffer_id,) = trace.live_ids([buffer])
    assert trace.born_scope(buffer_id) == "FSDP::"
    assert [trace.born_scope(i) for i in trace.live_ids([other, after, x])] == [None] * 3
