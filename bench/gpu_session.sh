#!/usr/bin/env bash
# Every GPU measurement issue #28 needs, in one run on a one-GPU machine, each step with its
# own time limit so one that hangs cannot eat the others' time. Written for the lent machines
# (docs/demos.md, "On GPUs"): their python3 holds a CUDA torch (2.11 when this was written)
# but none of ShardLab's other dependencies, so where .whl/ exists (scripts/gpu_wheels fills
# it) its wheels are installed first into a folder of their own.
#
#   bench/gpu_session.sh [OUT_DIR]     # OUT_DIR defaults to $OUT, else bench/results/gpu-<time>
#
# PYTHON names the interpreter (default python3), GPU_WHEELS the kit's folder (default .whl).
#
# Writes seven files into OUT_DIR (the lent machines send back at most eight):
#   env.txt               GPU, driver, Python, torch, NCCL; each step's exit code and seconds
#   steps.txt             every step's whole output, one after another under its name
#   gpu-profile.json      bench/gpu_profile.py: the profile the planner loads (--profile)
#   gpu-profile-run.json  bench/gpu_profile.py --json: GEMMs, HBM copy, memory-bound kernels
#   nccl-1.json           bench/gpu_check.py --backend nccl --ranks 1
#   gloo-cuda-2.json      bench/gpu_check.py --backend gloo --device cuda --ranks 2
#   report.md             bench/gpu_report.py over the reports above, for docs/benchmarks.md
# and runs, beside those, bench/gloo_cuda_ops.py (each collective gloo runs on CUDA tensors)
# and the GPU test (pytest -m gpu tests/demos/test_gpu.py, NCCL's Flight Recorder).
# Not yet run on a GPU (2026-11-30). The steps' limits add up to 9 minutes (run it with a
# timeout_s of 590); on CPU, where every CUDA step stops at once, the whole script takes
# about 15 s.
set -u
cd "$(dirname "$0")/.."
out="${1:-${OUT:-bench/results/gpu-$(date +%Y%m%d-%H%M%S)}}"
mkdir -p "$out"
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
wheels=${GPU_WHEELS:-.whl}  # the kit; a folder that does not exist: use this Python's own
if [ -d "$wheels" ]; then
    site=$(mktemp -d /tmp/shardlab-site.XXXXXX)
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target "$site" "$wheels"/*.whl || { echo "installing $wheels/ failed" >&2; exit 2; }
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
logs=$(mktemp -d /tmp/shardlab-steps.XXXXXX)
step() {  # step NAME LIMIT_S COMMAND...: runs it, its output appended to steps.txt
    local name=$1 limit=$2 started rc
    shift 2
    echo "== $name (limit ${limit}s): $*" | tee -a "$out/steps.txt"
    started=$(date +%s)
    timeout --kill-after 10 "$limit" "$@" >"$logs/$name.txt" 2>&1
    rc=$?
    cat "$logs/$name.txt" >>"$out/steps.txt"
    tail -n 40 "$logs/$name.txt"
    echo "step $name: exit $rc in $(($(date +%s) - started)) s" | tee -a "$out/env.txt" \
        "$out/steps.txt"
    [ "$rc" -eq 0 ] || failed=1
}

# The profile first: it takes seconds, and the planner's figures need nothing else to run.
step gpu-profile 100 "$python" bench/gpu_profile.py --device cuda --max-seconds 60 \
    --out "$out/gpu-profile.json" --json "$out/gpu-profile-run.json"
step nccl-1 120 "$python" bench/gpu_check.py --backend nccl --ranks 1 --json "$out/nccl-1.json"
step gloo-cuda-2 120 "$python" bench/gpu_check.py --backend gloo --device cuda --ranks 2 \
    --json "$out/gloo-cuda-2.json"
# The machine's own pytest plugins (xdist, cov, benchmark...) are built for its pytest, not
# for the one in .whl/: load none, since the project's tests need none.
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 step gpu-tests 100 \
    "$python" -m pytest -q -rs -p no:cacheprovider -m gpu tests/demos/test_gpu.py
# On a GPU box a skipped GPU test is a failure: it means no CUDA or no NCCL was found.
if ! grep -q " passed" "$logs/gpu-tests.txt" || grep -q "skipped" "$logs/gpu-tests.txt"; then
    echo "gpu-tests: the GPU test did not pass (skipped?)" | tee -a "$out/env.txt"
    failed=1
fi
step gloo-cuda-ops 100 "$python" bench/gloo_cuda_ops.py --device cuda
rm -rf "$logs"
# docs/benchmarks.md's section, from whichever reports the steps wrote.
reports=()
for report in "$out/nccl-1.json" "$out/gloo-cuda-2.json"; do
    [ -f "$report" ] && reports+=("$report")
done
[ -f "$out/gpu-profile-run.json" ] && reports+=(--profile "$out/gpu-profile-run.json")
if [ "${#reports[@]}" -gt 0 ]; then
    "$python" bench/gpu_report.py "${reports[@]}" --env "$out/env.txt" >"$out/report.md" 2>&1
fi
exit "$failed"
