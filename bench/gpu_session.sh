#!/usr/bin/env bash
# Every GPU measurement issue #12 still needs, in one run on a one-GPU machine, each step with
# its own time limit so one that hangs cannot eat the others' time. Written for the lent
# machines (docs/demos.md, "On GPUs"): their python3 holds a CUDA torch (2.11 when this was
# written) but none of ShardLab's other dependencies, so where .whl/ exists (scripts/gpu_wheels
# fills it) its wheels are installed first into a folder of their own.
#
#   bench/gpu_session.sh [OUT_DIR]     # OUT_DIR defaults to $OUT, else bench/results/gpu-<time>
#
# Writes at most eight files into OUT_DIR (what the lent machines send back):
#   env.txt               GPU, driver, Python, torch, NCCL; each step's exit code and seconds
#   nccl-1.txt/.json      bench/gpu_check.py --backend nccl --ranks 1
#   gloo-cuda-2.txt/.json bench/gpu_check.py --backend gloo --device cuda --ranks 2
#   gloo-cuda-ops.txt     bench/gloo_cuda_ops.py: each collective gloo runs on CUDA tensors
#   gpu-tests.txt         pytest -m gpu tests/demos/test_gpu.py
#   report.md             bench/gpu_report.py over the two JSON reports, for docs/benchmarks.md
# Not yet run on a GPU (2026-11-27). The steps' limits add up to 9 minutes; on CPU with torch
# 2.11, where every CUDA step stops at once, the whole script takes about 20 s.
set -u
cd "$(dirname "$0")/.."
out="${1:-${OUT:-bench/results/gpu-$(date +%Y%m%d-%H%M%S)}}"
mkdir -p "$out"
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
    site=$(mktemp -d /tmp/shardlab-site.XXXXXX)
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target "$site" .whl/*.whl || { echo "installing .whl/ failed" >&2; exit 2; }
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    "$python" - <<'EOF' 2>&1
import platform, torch, torch.distributed as dist
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
print("cuda available", torch.cuda.is_available(), "devices", torch.cuda.device_count())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), "capability", torch.cuda.get_device_capability(0))
    free, total = torch.cuda.mem_get_info(0)
    print("free", free, "total", total)
print("nccl", dist.is_nccl_available() and ".".join(map(str, torch.cuda.nccl.version())))
print("gloo", dist.is_gloo_available())
EOF
} >"$out/env.txt"
cat "$out/env.txt"

failed=0
step() {  # step NAME LIMIT_S COMMAND...: runs it, output to OUT_DIR/NAME.txt, notes rc and time
    local name=$1 limit=$2 started rc
    shift 2
    echo "== $name (limit ${limit}s): $*"
    started=$(date +%s)
    timeout --kill-after 10 "$limit" "$@" >"$out/$name.txt" 2>&1
    rc=$?
    tail -n 40 "$out/$name.txt"
    echo "step $name: exit $rc in $(($(date +%s) - started)) s" | tee -a "$out/env.txt"
    [ "$rc" -eq 0 ] || failed=1
}

step nccl-1 150 "$python" bench/gpu_check.py --backend nccl --ranks 1 --json "$out/nccl-1.json"
step gloo-cuda-2 150 "$python" bench/gpu_check.py --backend gloo --device cuda --ranks 2 \
    --json "$out/gloo-cuda-2.json"
step gloo-cuda-ops 120 "$python" bench/gloo_cuda_ops.py --device cuda
# The machine's own pytest plugins (xdist, cov, benchmark...) are built for its pytest, not
# for the one in .whl/: load none, since the project's tests need none.
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 step gpu-tests 120 \
    "$python" -m pytest -q -rs -p no:cacheprovider -m gpu tests/demos/test_gpu.py
# On a GPU box a skipped GPU test is a failure: it means no CUDA or no NCCL was found.
if ! grep -q " passed" "$out/gpu-tests.txt" || grep -q "skipped" "$out/gpu-tests.txt"; then
    echo "gpu-tests: the GPU test did not pass (skipped?)" | tee -a "$out/env.txt"
    failed=1
fi
# docs/benchmarks.md's section, from whichever reports the checks wrote.
reports=()
for report in "$out/nccl-1.json" "$out/gloo-cuda-2.json"; do
    [ -f "$report" ] && reports+=("$report")
done
if [ "${#reports[@]}" -gt 0 ]; then
    "$python" bench/gpu_report.py "${reports[@]}" --env "$out/env.txt" >"$out/report.md" 2>&1
fi
exit "$failed"
