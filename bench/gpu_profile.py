"""Measure your own GPU: its matmul ceiling, its HBM bandwidth and, with two GPUs or more,
NCCL's all-reduce bus bandwidth; written as a performance profile the planner loads.

One file because it is a script run as `python bench/gpu_profile.py` on the machine measured:
a sibling module would need the sys.path set-up bench/gloo_cuda_ops.py has, and the NCCL
ranks it spawns re-import the module that defines their function.

1. GEMMs: torch.mm of an M x K by a K x N matrix (the K x N one a transposed N x K weight, as in
   a linear layer), bf16 on CUDA and fp32 on CPU (--dtype), over a grid of 30 shapes (M 512 to
   16,384, N and K 256 to 16,384). Each shape is warmed up, then timed over its iterations:
   CUDA events around the loop, then a synchronize (time.perf_counter on CPU); FLOP/s = 2MNK /
   the mean time of one. The matmul ceiling is the best shape's figure: the max over shapes of
   the mean over timed iterations after warm-up, as stas00's mamf-finder.py defines its
   "maximum achievable matmul FLOPS" (ml-engineering, compute/accelerator/benchmarks).
2. HBM: dst.copy_(src) of 1 GiB on the GPU (64 MiB on CPU); each copy moves 2 x its size
   (read + write). Then two memory-bound kernels counted as the planner counts them
   (app/calc/planner/work.py): a norm (F.layer_norm over the last dimension) moves 2 values per
   element, a residual add (torch.add into a third tensor) 3, on T x h = 16,384 x 8,192 values
   (4,096 x 4,096 on CPU, as large as the copy) of the GEMMs' type. They are not written into
   the profile: they show which bandwidth the profile's hbm_efficiency should multiply
   (bench/gpu_report.py sets each beside what the planner predicts for it).
3. NCCL all_reduce of fp32 tensors with one process per GPU (torch.multiprocessing, spawn),
   messages of 1 MiB to 1 GiB, time = the slowest rank's mean: algbw = size / time and busbw =
   algbw x 2(n-1)/n, as nccl-tests defines them (doc/PERFORMANCE.md). The large-message busbw
   (best of the messages of 256 MiB or more) over --link's datasheet per-direction bandwidth
   (app.calc.links.LINKS) is the profile's intra_link_efficiency, clipped into its bounds
   (app.calc.performance.PARAMETERS). One GPU: skipped, and the default efficiency stays.

Prints every measurement as a table, then writes --out: app.calc.performance.PerformanceProfile
with gemm_flops, hbm_bytes_per_s and (when measured) intra_link_efficiency; every other
parameter keeps its default. The file is read back with load_profile before the script ends.

On CPU (--device cpu, the default without CUDA) the GEMMs are smaller and NCCL is skipped; the
profile then holds the CPU's own figures, named "measured on cpu (...)". Such a profile is for
testing this pipeline (tests/test_gpu_profile.py), not for planning GPUs. --max-seconds bounds
the whole run: the GEMMs get half of it (shapes not started when it runs out are skipped, and
said so), NCCL what is left, at least 60 s (its ranks are stopped when that runs out). The
default grid is 23 TFLOP a pass, 61 passes: about 2.5 s of matmuls at 600 TFLOP/s, so the
GEMMs should take seconds on an H100 (an estimate: not yet run on a GPU).

Run from the repository root (with the project installed, or PYTHONPATH=.):
  python bench/gpu_profile.py --out my-gpu.json                    # every GPU of this machine
  python bench/gpu_profile.py --link pcie5 --out my-gpu.json       # GPUs joined by PCIe 5
  .venv/bin/python bench/gpu_profile.py --device cpu --quick --out /tmp/cpu.json   # seconds
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from app.calc.links import LINKS, Link
from app.calc.performance import PARAMETERS, PerformanceProfile, load_profile
from app.calc.profiles import default_profile

MIB = 2**20
GIB = 2**30
# (M, N, K): squares, then M tokens through linear layers of a 4,096-wide model with a
# 14,336-wide MLP (Llama 3 8B), thin and wide ones, and K up to 16,384.
GPU_GEMMS: tuple[tuple[int, int, int], ...] = (
    *((s, s, s) for s in (512, 1024, 2048, 4096, 8192, 16384)),
    *(
        (m, n, k)
        for m in (2048, 8192, 16384)
        for n, k in (
            (256, 16384), (1024, 4096), (4096, 1024), (4096, 14336),
            (14336, 4096), (6144, 8192), (16384, 2048), (2048, 16384),
        )
    ),
)  # fmt: skip
CPU_GEMMS = (
    *((s, s, s) for s in (256, 512, 1024, 2048)),
    (2048, 256, 2048), (2048, 2048, 256), (1024, 4096, 1024), (1024, 1024, 4096),
)  # fmt: skip
QUICK_GEMMS = {
    "cuda": ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192)),
    "cpu": ((256, 256, 256), (512, 512, 512), (1024, 1024, 1024)),
}
COPY_MIB = {"cuda": 1024, "cpu": 64}
# T tokens x h values through a norm and a residual add: 256 MiB in bf16 (64 MiB in fp32 on
# CPU), beyond any cache.
MEMORY_BOUND_SHAPE = {"cuda": (16384, 8192), "cpu": (4096, 4096)}
QUICK_COPY_MIB = {"cuda": 256, "cpu": 64}
# Warm-up and (at most) timed iterations per measurement; fewer GEMM iterations where the
# shape's share of --max-seconds would not hold them (at least MIN_ITERATIONS).
ITERATIONS = {"cuda": (10, 50), "cpu": (2, 10)}
QUICK_ITERATIONS = {"cuda": (5, 20), "cpu": (1, 5)}
MIN_ITERATIONS = 3
ALL_REDUCE_SIZES = tuple(MIB * 2**i for i in range(11))  # 1 MiB .. 1 GiB
QUICK_ALL_REDUCE_SIZES = (MIB, 8 * MIB, 64 * MIB)
ALL_REDUCE_ITERATIONS = (5, 20)
LARGE_MESSAGE = 256 * MIB
GEMM_SHARE = 0.5  # of --max-seconds
NCCL_MIN_SECONDS = 60.0  # NCCL's start-up on 8 GPUs alone takes seconds
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass(frozen=True)
class Gemm:
    m: int
    n: int
    k: int
    iterations: int
    seconds: float  # mean per GEMM

    @property
    def flops_per_s(self) -> float:
        return 2.0 * self.m * self.n * self.k / self.seconds


@dataclass(frozen=True)
class Copy:
    size_bytes: int
    iterations: int
    seconds: float  # mean per copy

    @property
    def bytes_per_s(self) -> float:
        return 2.0 * self.size_bytes / self.seconds  # read + write


@dataclass(frozen=True)
class AllReduce:
    size_bytes: int
    ranks: int
    iterations: int
    seconds: float  # the slowest rank's mean

    @property
    def algbw(self) -> float:
        return self.size_bytes / self.seconds

    @property
    def busbw(self) -> float:
        return bus_bandwidth(self.size_bytes, self.seconds, self.ranks)


def bus_bandwidth(size_bytes: float, seconds: float, ranks: int) -> float:
    """nccl-tests' busBw of an all-reduce: algbw x 2(n-1)/n, what each rank sends per second."""
    return size_bytes / seconds * 2 * (ranks - 1) / ranks


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="auto: cuda if available, else cpu",
    )
    parser.add_argument(
        "--dtype",
        choices=("auto", *DTYPES),
        default="auto",
        help="GEMM type; auto: bf16 on cuda, fp32 on cpu (bf16 is slow there)",
    )
    parser.add_argument("--quick", action="store_true", help="3 GEMM shapes, a smaller copy")
    intra = [slug for slug, link in LINKS.items() if link.scope == "intra-node"]
    parser.add_argument(
        "--link",
        choices=intra,
        default="nvlink4",
        help="the GPUs' link, whose datasheet bandwidth the measured NCCL bus "
        "bandwidth is a fraction of (app.calc.links; default nvlink4)",
    )
    parser.add_argument("--no-nccl", action="store_true", help="skip the all-reduce sweep")
    parser.add_argument(
        "--max-seconds", type=float, default=300.0, help="bound on the whole run (default 300)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("gpu-profile.json"),
        help="the profile to write (default gpu-profile.json)",
    )
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    return parser.parse_args(argv)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def mean_seconds(fn: Callable[[], object], device: torch.device, iterations: int) -> float:
    """Mean seconds of one call over `iterations` back-to-back calls: CUDA events around the
    loop, then a synchronize, on a GPU; time.perf_counter on CPU."""
    synchronize(device)
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / iterations
    started = time.perf_counter()
    for _ in range(iterations):
        fn()
    return (time.perf_counter() - started) / iterations


def measure(
    fn: Callable[[], object], device: torch.device, warmup: int, most: int, budget_s: float
) -> tuple[int, float]:
    """(iterations, mean seconds) after warm-up: at most `most` iterations, fewer where the
    warm-up's pace says `budget_s` would not hold them, never under MIN_ITERATIONS."""
    fn()  # the first call pays for handles, heuristics and page faults
    pace = mean_seconds(fn, device, max(warmup, 1))
    iterations = max(MIN_ITERATIONS, int(min(most, budget_s / max(pace, 1e-9))))
    return iterations, mean_seconds(fn, device, iterations)


def gemm(
    m: int, n: int, k: int, dtype: torch.dtype, device: torch.device, warmup: int, most: int,
    budget_s: float,
) -> Gemm:  # fmt: skip
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(n, k, dtype=dtype, device=device).t()  # a linear layer's weight, transposed
    c = torch.empty(m, n, dtype=dtype, device=device)
    iterations, seconds = measure(lambda: torch.mm(a, b, out=c), device, warmup, most, budget_s)
    return Gemm(m, n, k, iterations, seconds)


def flops_unit(device: torch.device) -> tuple[float, str]:
    return (1e12, "TFLOP/s") if device.type == "cuda" else (1e9, "GFLOP/s")


def gemm_sweep(
    shapes: tuple[tuple[int, int, int], ...], dtype: torch.dtype, device: torch.device,
    warmup: int, most: int, budget_s: float,
) -> tuple[list[Gemm], int]:  # fmt: skip
    """Every shape that `budget_s` leaves time for (the first always), printed as it ends;
    and how many were skipped."""
    deadline = time.monotonic() + budget_s
    scale, unit = flops_unit(device)
    print(f"{'M':>7}{'N':>7}{'K':>7}{'iters':>7}{'ms':>11}{unit:>10}")
    rows: list[Gemm] = []
    for i, (m, n, k) in enumerate(shapes):
        left = deadline - time.monotonic()
        if rows and left <= 0:
            return rows, len(shapes) - i
        row = gemm(m, n, k, dtype, device, warmup, most, max(left, 0.0) / (len(shapes) - i))
        rows.append(row)
        print(f"{m:>7}{n:>7}{k:>7}{row.iterations:>7}{row.seconds * 1e3:>11.4f}"
              f"{row.flops_per_s / scale:>10.2f}", flush=True)  # fmt: skip
    return rows, 0


def copy_bandwidth(size_bytes: int, device: torch.device, warmup: int, most: int) -> Copy:
    src = torch.empty(size_bytes, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    iterations, seconds = measure(lambda: dst.copy_(src), device, warmup, most, math.inf)
    return Copy(size_bytes, iterations, seconds)


@dataclass(frozen=True)
class MemoryBound:
    """One memory-bound kernel over `elements` values, moving `values_moved` values of
    `value_bytes` per element (read + written) as app/calc/planner/work.py counts it."""

    kernel: str
    elements: int
    values_moved: int
    value_bytes: int
    iterations: int
    seconds: float  # mean per kernel

    @property
    def bytes_moved(self) -> int:
        return self.values_moved * self.elements * self.value_bytes

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.seconds


def memory_bound_kernels(
    shape: tuple[int, int], dtype: torch.dtype, device: torch.device, warmup: int, most: int
) -> list[MemoryBound]:
    """A norm and a residual add over a tokens x hidden tensor, timed as the GEMMs are."""
    tokens, hidden = shape
    x = torch.randn(tokens, hidden, dtype=dtype, device=device)
    y = torch.randn_like(x)
    out = torch.empty_like(x)
    weight = torch.ones(hidden, dtype=dtype, device=device)
    bias = torch.zeros(hidden, dtype=dtype, device=device)
    value_bytes = x.element_size()
    kernels = (
        ("layer_norm", 2, lambda: torch.nn.functional.layer_norm(x, (hidden,), weight, bias)),
        ("residual add", 3, lambda: torch.add(x, y, out=out)),
    )
    rows = []
    for kernel, values_moved, fn in kernels:
        iterations, seconds = measure(fn, device, warmup, most, math.inf)
        rows.append(MemoryBound(kernel, x.numel(), values_moved, value_bytes, iterations, seconds))
    return rows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _all_reduce_rank(
    rank: int, ranks: int, backend: str, port: int, sizes: tuple[int, ...], warmup: int,
    iterations: int, out: str,
) -> None:  # fmt: skip
    """One rank of the sweep (torch.multiprocessing calls it); rank 0 writes the rows to `out`."""
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks,
        device_id=device if device.type == "cuda" else None,
    )  # fmt: skip
    try:
        rows = []
        for size in sizes:
            x = torch.zeros(size // 4, dtype=torch.float32, device=device)  # sums stay 0
            for _ in range(warmup):
                dist.all_reduce(x)
            dist.barrier()
            seconds = mean_seconds(lambda x=x: dist.all_reduce(x), device, iterations)
            slowest = torch.tensor([seconds], dtype=torch.float64, device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # done when the last rank is
            rows.append(asdict(AllReduce(size, ranks, iterations, slowest.item())))
        if rank == 0:
            Path(out).write_text(json.dumps(rows))
    finally:
        dist.destroy_process_group()


def all_reduce_sweep(
    ranks: int, sizes: tuple[int, ...], backend: str = "nccl", timeout_s: float = 300.0,
    warmup: int = ALL_REDUCE_ITERATIONS[0], iterations: int = ALL_REDUCE_ITERATIONS[1],
) -> list[AllReduce]:  # fmt: skip
    """all_reduce over `ranks` spawned processes (one per GPU with nccl; gloo on CPU tensors
    tests the plumbing). Raises RuntimeError with the cause when a rank fails or `timeout_s`
    passes (the ranks are then stopped)."""
    with tempfile.TemporaryDirectory(prefix="gpu-profile-") as tmp:
        out = Path(tmp) / "all_reduce.json"
        args = (ranks, backend, free_port(), sizes, warmup, iterations, str(out))
        context = mp.start_processes(_all_reduce_rank, args, nprocs=ranks, join=False)
        deadline = time.monotonic() + timeout_s
        try:
            while not context.join(timeout=1.0):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"not done in {timeout_s:.0f} s; its ranks were stopped")
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as error:
            raise RuntimeError(f"a rank failed: {str(error).strip().splitlines()[-1]}") from None
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()  # ours, started above
                    process.join(10)
        return [AllReduce(**row) for row in json.loads(out.read_text())]


def large_message_busbw(rows: list[AllReduce]) -> AllReduce:
    """The best busbw among the messages of LARGE_MESSAGE or more (the largest message when
    none is that large): what NCCL's bandwidth term sees."""
    floor = min(LARGE_MESSAGE, max(row.size_bytes for row in rows))
    return max((row for row in rows if row.size_bytes >= floor), key=lambda row: row.busbw)


def link_efficiency(busbw: float, link: Link) -> tuple[float, str | None]:
    """busbw over the link's per-direction datasheet figure, clipped into the parameter's
    bounds; with a sentence when clipped."""
    bounds = PARAMETERS["intra_link_efficiency"]
    measured = busbw / link.bandwidth_bytes_per_s
    clipped = min(max(measured, bounds.low), bounds.high)
    if clipped == measured:
        return measured, None
    return clipped, (
        f"the measured {measured:.3f} of {link.name}'s {link.bandwidth_bytes_per_s / 1e9:g} GB/s "
        f"lies outside intra_link_efficiency's bounds {bounds.low:g} to {bounds.high:g}: "
        f"clipped to {clipped:g} (is --link right?)"
    )


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        model = next(line.split(":", 1)[1].strip() for line in lines if "model name" in line)
    except (OSError, StopIteration):
        pass
    return f"cpu ({model}, {torch.get_num_threads()} threads)"


@dataclass(frozen=True)
class Links:
    """The all-reduce sweep's rows, its sentence for the table and the profile's source, and
    the intra_link_efficiency it gives (the default where nothing was measured)."""

    rows: list[AllReduce]
    said: str
    efficiency: float
    note: str | None = None  # why the efficiency was clipped


def link_sweep(args: argparse.Namespace, kind: str, gpus: int, seconds_left: float) -> Links:
    """The NCCL sweep where there are GPUs to run it on, printed; else why not."""
    nccl = "NCCL all-reduce"
    default = default_profile().intra_link_efficiency
    kept = f"; intra_link_efficiency stays at the default profile's {default:.3g}"
    if kind == "cpu":
        return Links([], f"{nccl}: skipped on CPU (NCCL needs GPUs){kept}", default)
    if args.no_nccl:
        return Links([], f"{nccl}: skipped (--no-nccl){kept}", default)
    if gpus < 2:
        return Links([], f"{nccl}: skipped ({gpus} GPU: needs 2 or more){kept}", default)
    sizes = QUICK_ALL_REDUCE_SIZES if args.quick else ALL_REDUCE_SIZES
    warmup, iterations = ALL_REDUCE_ITERATIONS
    print(f"\n{nccl}, fp32, {gpus} ranks, {warmup} warm-up + {iterations} timed iterations each")
    print(f"{'MiB':>9}{'ms':>11}{'algbw GB/s':>12}{'busbw GB/s':>12}", flush=True)
    torch.cuda.empty_cache()  # the GEMMs' and the copy's blocks, on GPU 0 beside rank 0
    try:
        rows = all_reduce_sweep(gpus, sizes, "nccl", max(seconds_left, NCCL_MIN_SECONDS))
    except RuntimeError as error:
        return Links([], f"{nccl}: failed, {error}{kept}", default)
    for row in rows:
        print(
            f"{row.size_bytes / MIB:>9g}{row.seconds * 1e3:>11.4f}"
            f"{row.algbw / 1e9:>12.1f}{row.busbw / 1e9:>12.1f}"
        )
    link = LINKS[args.link]
    large = large_message_busbw(rows)
    efficiency, note = link_efficiency(large.busbw, link)
    said = (
        f"{nccl} busbw {large.busbw / 1e9:.1f} GB/s at {large.size_bytes / MIB:g} MiB on {gpus} "
        f"GPUs = {large.busbw / link.bandwidth_bytes_per_s:.3f} x {link.slug}'s "
        f"{link.bandwidth_bytes_per_s / 1e9:g} GB/s per direction"
    )
    return Links(rows, said, efficiency, note)


def write_profile(
    out: Path, name: str, source: str, best: Gemm, copy: Copy, links: Links
) -> PerformanceProfile | None:
    """The measured profile, written and read back; None (said on stderr) if it does not load
    back as itself.

    It starts from the default profile (fitted to published runs): the measured ceilings
    replace the MAMF and datasheet figures its efficiencies multiply, so the in-step shares
    the fit found stay, and the link efficiency is the one measured here. Its held-out errors
    belonged to the fitted profile, not to this one, so they are dropped."""
    profile = replace(
        default_profile(),
        name=f"measured on {name}",
        source=f"{source}; efficiencies inside a step from {default_profile().name}",
        gemm_flops=best.flops_per_s,
        hbm_bytes_per_s=copy.bytes_per_s,
        intra_link_efficiency=links.efficiency,
        held_out_mean_error=None,
        held_out_worst_error=None,
    )
    out.write_text(profile.to_json())
    if load_profile(out.read_text()) != profile:
        print(f"{out} does not load back as the profile written", file=sys.stderr)
        return None
    return profile


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    kind = args.device if args.device != "auto" else "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cuda" and not torch.cuda.is_available():
        print(
            "--device cuda: no CUDA device here (torch.cuda.is_available() is False); "
            "--device cpu measures this CPU",
            file=sys.stderr,
        )
        return 2
    device = torch.device(kind, 0) if kind == "cuda" else torch.device("cpu")
    dtype_name = args.dtype if args.dtype != "auto" else "bf16" if kind == "cuda" else "fp32"
    name = device_name(device)
    gpus = torch.cuda.device_count() if kind == "cuda" else 0
    versions = f"torch {torch.__version__}" + (f", CUDA {torch.version.cuda}" if gpus else "")
    print(f"device: {name}" + (f", {gpus} GPU(s)" if gpus else "") + f"; {versions}")
    if kind == "cpu":
        print("a CPU's figures: for testing this pipeline, not for planning GPUs")

    warmup, most = (QUICK_ITERATIONS if args.quick else ITERATIONS)[kind]
    shapes = QUICK_GEMMS[kind] if args.quick else GPU_GEMMS if kind == "cuda" else CPU_GEMMS
    print(
        f"\nGEMM {dtype_name}: C (M x N) = A (M x K) @ B (K x N), {warmup} warm-up + up to "
        f"{most} timed iterations each; --max-seconds {args.max_seconds:g}"
    )
    budget = args.max_seconds * GEMM_SHARE
    gemms, skipped = gemm_sweep(shapes, DTYPES[dtype_name], device, warmup, most, budget)
    best = max(gemms, key=lambda row: row.flops_per_s)
    if skipped:
        print(f"{skipped} shape(s) skipped: --max-seconds {args.max_seconds:g} ran out")
    scale, unit = flops_unit(device)
    print(
        f"matmul ceiling: {best.flops_per_s / scale:.2f} {unit} at {best.m} x {best.n} x "
        f"{best.k} (max over {len(gemms)} shapes of the mean)"
    )

    size = (QUICK_COPY_MIB if args.quick else COPY_MIB)[kind] * MIB
    copy = copy_bandwidth(size, device, warmup, most)
    print(
        f"\nmemory: dst.copy_(src) of {size / MIB:g} MiB, 2 x {size / MIB:g} MiB moved per copy, "
        f"{copy.iterations} iterations: {copy.seconds * 1e3:.3f} ms, "
        f"{copy.bytes_per_s / 1e9:.1f} GB/s"
    )

    shape = MEMORY_BOUND_SHAPE[kind]
    kernels = memory_bound_kernels(shape, DTYPES[dtype_name], device, warmup, most)
    print(f"memory-bound kernels over {shape[0]:,} x {shape[1]:,} {dtype_name} values:")
    for row in kernels:
        print(
            f"  {row.kernel}: {row.values_moved} values moved per element, {row.iterations} "
            f"iterations: {row.seconds * 1e3:.3f} ms, {row.bytes_per_s / 1e9:.1f} GB/s "
            f"({row.bytes_per_s / copy.bytes_per_s:.3f} of the copy's)"
        )

    links = link_sweep(args, kind, gpus, args.max_seconds - (time.monotonic() - started))
    print(f"\n{links.said}" + (f"\n{links.note}" if links.note else ""))

    when = datetime.now(UTC).strftime("%Y-%m-%d")
    source = (
        f"bench/gpu_profile.py {when}, {versions}: {dtype_name} GEMM ceiling (max over "
        f"{len(gemms)} shapes of the mean), dst.copy_(src) of {size / MIB:g} MiB; {links.said}"
        + (f" ({links.note})" if links.note else "")
        + ("; a CPU profile: for testing the pipeline, not planning GPUs" if kind == "cpu" else "")
    )
    profile = write_profile(args.out, name, source, best, copy, links)
    if profile is None:
        return 1
    print(
        f"\nwrote {args.out} ({profile.name}), and it loads back: gemm_flops "
        f"{profile.gemm_flops:.4g}, hbm_bytes_per_s {profile.hbm_bytes_per_s:.4g}, "
        f"intra_link_efficiency {profile.intra_link_efficiency:.3g}; "
        f"{time.monotonic() - started:.1f} s in all"
    )
    if args.json:
        report = {
            "device": kind, "device_name": name, "gpus": gpus, "versions": versions,
            "dtype": dtype_name,
            "gemms": [asdict(row) | {"flops_per_s": row.flops_per_s} for row in gemms],
            "gemms_skipped": skipped,
            "copy": asdict(copy) | {"bytes_per_s": copy.bytes_per_s},
            "memory_bound": [
                asdict(row) | {"bytes_moved": row.bytes_moved, "bytes_per_s": row.bytes_per_s}
                for row in kernels
            ],
            "all_reduces": [asdict(r) | {"algbw": r.algbw, "busbw": r.busbw} for r in links.rows],
            "nccl": links.said, "link": args.link, "profile": json.loads(profile.to_json()),
        }  # fmt: skip
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
