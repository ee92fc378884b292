#!/usr/bin/env bash
# The GPU check: install lodestar with the CUDA build of JAX, run the test suite
# on the GPU, benchmark the exact metrics (and the losses, if time is left) on
# 1,000,000x100 and 10,000x10,000 float32 batches against Rax, and write one
# JSON of the results. Budgeted to finish within 8 minutes on one H200-class GPU.
#
# Usage, from a fresh virtualenv on a machine with an NVIDIA GPU:
#
#     benchmarks/gpu_check.sh                  # the check; the JSON goes to $OUT or benchmarks/results/
#     benchmarks/gpu_check.sh --cpu-dry-run    # the same steps on CPU at tiny sizes, nothing installed
#
# Environment:
#   OUT                     folder for the JSON (default benchmarks/results/)
#   PYTHON                  the interpreter to install into and run (default python3)
#   JAX_CUDA_EXTRA          cuda12 or cuda13 (default: cuda13 when the NVIDIA driver is
#                           580 or newer, which CUDA 13 needs, else cuda12)
#   JAX_VERSION             jax version to install (default: the installed one, else the newest)
#   GPU_CHECK_SKIP_INSTALL  1: use the environment as it is (for machines without network)
#   GPU_CHECK_BUDGET_S      seconds for the whole check (default 450)
#   GPU_CHECK_PYTEST_ARGS   what pytest runs (default: the whole suite; dry run: tests/test_bench.py)
#   GPU_CHECK_CPU_DRY_RUN   1: same as --cpu-dry-run
#
# Every step runs under `timeout` with its share of the budget; a step that fails
# or runs out of time is recorded in the JSON and the later steps still run (an
# interrupted benchmark keeps the shapes it finished). The exit status is 0 only
# if every step succeeded.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY_RUN="${GPU_CHECK_CPU_DRY_RUN:-0}"
for arg in "$@"; do
    case "$arg" in
        --cpu-dry-run) DRY_RUN=1 ;;
        -h | --help) sed -n '2,25p' "$0"; exit 0 ;;
        *) echo "gpu_check: unknown argument $arg (see --help)" >&2; exit 2 ;;
    esac
done

PY="${PYTHON:-python3}"
BUDGET_S="${GPU_CHECK_BUDGET_S:-450}"
START_S=$SECONDS
WORK="$(mktemp -d)"
STEPS="$WORK/steps.jsonl"
: >"$STEPS"
if [ "$DRY_RUN" = 1 ]; then
    export JAX_PLATFORMS=cpu
    SHAPES=(2000x100 20x1000)
    SMOOTH=(--quick)
    PYTEST_ARGS="${GPU_CHECK_PYTEST_ARGS:-tests/test_bench.py}"
    MODE=cpu-dry-run
else
    # cuda first, so it is the default backend; cpu too, so that the tests that
    # compare the CPU's route (lodestar's compiled kernels) with XLA's run there.
    export JAX_PLATFORMS=cuda,cpu
    SHAPES=(1000000x100 10000x10000)
    SMOOTH=(--reps 3 --only approx_ndcg,softmax,lambda_full)
    PYTEST_ARGS="${GPU_CHECK_PYTEST_ARGS:-}"
    MODE=gpu
fi
FAILED=0

say() { printf '[gpu_check %3ds] %s\n' "$((SECONDS - START_S))" "$*"; }

# The seconds a step may take: its own budget, capped by what the whole check
# has left (keeping 15 s to write the JSON).
allowance() {
    local left=$((BUDGET_S - (SECONDS - START_S) - 15))
    if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# run_step NAME BUDGET_S COMMAND...: run under timeout, log to $WORK/NAME.log,
# and append {name, rc, seconds, timed_out} to the step record.
run_step() {
    local name="$1" budget
    budget="$(allowance "$2")"
    shift 2
    if [ "$budget" -lt 5 ]; then
        say "$name: skipped, the budget is spent"
        printf '{"name": "%s", "rc": null, "seconds": 0, "skipped": true}\n' "$name" >>"$STEPS"
        FAILED=1
        return 1
    fi
    say "$name: start (up to ${budget}s): $*"
    local begin=$SECONDS rc
    # SIGINT first, so that pytest still prints its summary and writes its report.
    timeout -s INT -k 20 "$budget" "$@" >"$WORK/$name.log" 2>&1
    rc=$?
    local took=$((SECONDS - begin)) timed_out=false
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then timed_out=true; fi
    printf '{"name": "%s", "rc": %d, "seconds": %d, "timed_out": %s}\n' \
        "$name" "$rc" "$took" "$timed_out" >>"$STEPS"
    tail -n 3 "$WORK/$name.log" | sed 's/^/    | /'
    if [ "$rc" -ne 0 ]; then
        say "$name: FAILED (exit $rc, timed out: $timed_out, ${took}s); log: $WORK/$name.log"
        FAILED=1
        return 1
    fi
    say "$name: ok (${took}s)"
}

say "mode $MODE, budget ${BUDGET_S}s, python $PY, work folder $WORK"

# 1. Install lodestar and the CUDA build of JAX.
if [ "$DRY_RUN" = 1 ] || [ "${GPU_CHECK_SKIP_INSTALL:-0}" = 1 ]; then
    say "install: skipped ($MODE; GPU_CHECK_SKIP_INSTALL=${GPU_CHECK_SKIP_INSTALL:-0})"
else
    extra="${JAX_CUDA_EXTRA:-}"
    if [ -z "$extra" ]; then
        driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
        if [ "${driver%%.*}" -ge 580 ] 2>/dev/null; then extra=cuda13; else extra=cuda12; fi
        say "install: NVIDIA driver '${driver:-unknown}': jax[$extra]"
    fi
    jax_version="${JAX_VERSION:-$("$PY" -c 'import jax; print(jax.__version__)' 2>/dev/null)}"
    run_step install 180 "$PY" -m pip install --quiet -e ".[test]" \
        "jax[$extra]${jax_version:+==$jax_version}"
fi

# 2. The device JAX sees; the GPU check stops here without a GPU.
run_step devices 60 "$PY" -c '
import jax
print(jax.default_backend(), "|", jax.devices(), "|", jax.devices()[0].device_kind)
'
if [ "$DRY_RUN" != 1 ] && ! grep -q '^gpu ' "$WORK/devices.log"; then
    say "devices: JAX sees no GPU; the remaining steps are skipped"
    FAILED=1
    SKIP_REST=1
fi

if [ -z "${SKIP_REST:-}" ]; then
    # 3. The test suite on the device, stopping at the first failure.
    # shellcheck disable=SC2086 # GPU_CHECK_PYTEST_ARGS is a list of words
    run_step pytest 120 "$PY" -m pytest -x -q -p no:cacheprovider \
        --junitxml="$WORK/pytest.xml" $PYTEST_ARGS

    # 4. Exact metrics against Rax and the sort floor, with memory; scikit-learn
    #    checks the first lists (the batches are too large to time it).
    run_step bench_exact 180 "$PY" benchmarks/bench_exact.py --shapes "${SHAPES[@]}" \
        --memory-shapes --reps 3 --json "$WORK/bench_exact.json"

    # 5. The device allocator's high-water mark is process-wide, so NDCG's peak
    #    is measured once per fresh process.
    for shape in "${SHAPES[@]}"; do
        for row in ndcg ndcg@10; do
            run_step "memory_${row/@/_at_}_$shape" 30 "$PY" benchmarks/bench_exact.py \
                --shapes "$shape" --metrics "$row" --memory-shapes --no-rax --no-sklearn \
                --reps 1 --json "$WORK/memory_${row/@/_at_}_$shape.json"
        done
    done

    # 6. The losses against Rax, value and gradient, while time is left.
    run_step bench_smooth 60 "$PY" benchmarks/bench_smooth.py "${SMOOTH[@]}" \
        --json "$WORK/bench_smooth.json"
fi

# 7. One JSON: the steps, the test summary and every benchmark's results.
RESULTS="${OUT:-benchmarks/results}"
mkdir -p "$RESULTS"
"$PY" - "$WORK" "$RESULTS" "$MODE" "$FAILED" <<'EOF'
import json
import pathlib
import re
import sys
import time
import xml.etree.ElementTree as ET

work, results, mode, failed = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
steps = [json.loads(line) for line in (work / "steps.jsonl").read_text().splitlines()]
device = "unknown"
if (work / "devices.log").exists():
    device = (work / "devices.log").read_text().strip().splitlines()[-1]
report = {
    "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "mode": mode,
    "device": device,
    "all_steps_ok": failed == "0",
    "steps": steps,
}
junit = work / "pytest.xml"
if junit.exists():
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    report["pytest"] = {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped", "time")}
    report["pytest"]["failed"] = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in suite.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
for path in sorted(work.glob("*.json")):
    report[path.stem] = json.loads(path.read_text())
kind = device.split("|")[-1].strip() if mode == "gpu" else mode
slug = re.sub(r"[^A-Za-z0-9]+", "-", kind).strip("-")
name = f"gpu_check_{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}_{slug or 'device'}.json"
out = pathlib.Path(results) / name
out.write_text(json.dumps(report, indent=2) + "\n")
print(out)
EOF
say "wrote the results above; logs in $WORK"
if [ "$FAILED" -ne 0 ]; then
    say "some steps failed or were skipped: see \"steps\" in the JSON"
    exit 1
fi
say "every step succeeded"
