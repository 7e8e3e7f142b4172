#!/usr/bin/env bash
# Runs `feeder bench ablation --quick` and checks its outputs are complete and well-formed (not
# their timings): every row and sweep point present with numbers, the Markdown table naming every
# row, and a valid PNG chart. Usage: bench/ablation_check.sh [FEEDER] [OUT_DIR]
set -u
cd "$(dirname "$0")/.."
FEEDER=${1:-build/feeder}  # runs build/feeder-bench beside it
OUT=${2:-$(mktemp -d /tmp/feeder-ablation-check-XXXXXX)}

if [[ ! -x $FEEDER ]]; then
  echo "ablation: $FEEDER not found or not executable (build it first)" >&2
  exit 1
fi
# `feeder bench` runs the benchmark executable built beside feeder.
if [[ ! -x $(dirname "$FEEDER")/feeder-bench ]]; then
  echo "ablation: $(dirname "$FEEDER")/feeder-bench not found (build it: cmake --build build)" >&2
  exit 1
fi

start=$(date +%s)
"$FEEDER" bench ablation --quick --out "$OUT" >"$OUT.stdout" 2>"$OUT.stderr"
status=$?
elapsed=$(($(date +%s) - start))
echo "ablation: quick run took ${elapsed}s (exit $status), outputs in $OUT"

/usr/bin/python3 - "$OUT" "$status" <<'PY'
import json, math, os, sys

out, run_status = sys.argv[1], int(sys.argv[2])
passed = failed = 0

def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}")

def number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

check(run_status == 0, f"feeder bench ablation --quick exited with {run_status}")

EXPECTED_ROWS = [
    "py-v1-b16", "py-v1-b512", "py-workers", "py-persistent", "py-pinned", "py-v2",
    "cpp-naive-b16", "cpp-naive-b512", "cpp-workers", "cpp-persistent", "cpp-pinned", "cpp-eager",
    "py-v2-malloc", "torch-data-mnist", "feeder-channels-last", "feeder-bf16", "feeder-defaults", "compute-only", "memcpy",
]
try:
    with open(os.path.join(out, "ablation.json")) as f:
        report = json.load(f)
except (OSError, ValueError) as error:
    check(False, f"ablation.json unreadable: {error}")
    report = {}

rows = {row.get("id"): row for row in report.get("rows", [])}
for row_id in EXPECTED_ROWS:
    row = rows.get(row_id)
    check(row is not None, f"row {row_id} missing from ablation.json")
    if row is None:
        continue
    check(row.get("status") == "ok", f"row {row_id}: status {row.get('status')!r}")
    loader = row.get("loader_only") or {}
    for key in ("train_seconds", "test_seconds", "total_seconds", "samples_per_second"):
        check(number(loader.get(key)), f"row {row_id}: loader_only.{key} is not a number")
    if row.get("trains"):
        train = row.get("train") or {}
        for key in ("train_seconds", "test_seconds", "total_seconds", "samples_per_second",
                    "data_wait_share", "peak_rss_mb"):
            check(number(train.get(key)), f"row {row_id}: train.{key} is not a number")
        check(number(row.get("speedup")), f"row {row_id}: speedup is not a number")
        if row_id != "compute-only":
            check(number(train.get("accuracy")), f"row {row_id}: train.accuracy is not a number")

for sweep, with_loader in (("batch_sweep", False), ("worker_sweep", True)):
    points = report.get(sweep, [])
    check(len(points) >= 4, f"{sweep}: {len(points)} points, expected at least 4")
    for point in points:
        name = f"{sweep} {point.get('pipeline')} batch {point.get('batch_size')} workers {point.get('num_workers')}"
        check(point.get("status") == "ok", f"{name}: status {point.get('status')!r}")
        check(number((point.get("train") or {}).get("total_seconds")), f"{name}: no training time")
        if with_loader:
            check(number((point.get("loader_only") or {}).get("total_seconds")), f"{name}: no loader-only time")

repeats = report.get("seed_repeats") or {}
runs = repeats.get("runs") or []
check(len(runs) >= 2, f"seed_repeats: {len(runs)} runs, expected at least 2")
check(len({run.get("seed") for run in runs}) == len(runs), "seed_repeats: seeds repeat")
for run in runs:
    for side in ("python_v2", "feeder_defaults"):
        check(run.get(f"{side}_status") == "ok", f"seed {run.get('seed')} {side}: status {run.get(f'{side}_status')!r}")
        numbers = run.get(side) or {}
        for key in ("total_seconds", "accuracy"):
            check(number(numbers.get(key)), f"seed {run.get('seed')} {side}: {key} is not a number")
for key in ("python_v2_median_total_seconds", "feeder_defaults_median_total_seconds", "speedup_vs_python_v2",
            "python_v2_mean_accuracy", "feeder_defaults_mean_accuracy", "accuracy_gap_points"):
    check(number(repeats.get(key)), f"seed_repeats.{key} is not a number")
check(repeats.get("python_v2_runs") == len(runs) and repeats.get("feeder_defaults_runs") == len(runs),
      "seed_repeats: summary counts differ from the runs")

machine = report.get("machine", {})
for key in ("cpu_model", "num_cpus", "torch_version", "date"):
    check(machine.get(key) not in (None, ""), f"machine.{key} missing")

try:
    with open(os.path.join(out, "ablation.md"), encoding="utf-8") as f:
        table = f.read()
except OSError as error:
    check(False, f"ablation.md unreadable: {error}")
    table = ""
check(table.count("\n| ") >= len(EXPECTED_ROWS), "ablation.md has fewer table lines than rows")
for row in report.get("rows", []):
    check(f"| {row.get('method')}" in table, f"ablation.md has no line for {row.get('id')}")
check("against feeder's defaults over" in table, "ablation.md has no seed-repeat section")
for run in runs:
    check(f"\n| {run.get('seed')} | " in table, f"ablation.md has no line for seed {run.get('seed')}")

png = os.path.join(out, "ablation.png")
try:
    with open(png, "rb") as f:
        head = f.read(24)
    ok = head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    width = int.from_bytes(head[16:20], "big") if ok else 0
    height = int.from_bytes(head[20:24], "big") if ok else 0
    check(ok and width >= 400 and height >= 300 and os.path.getsize(png) > 10_000,
          f"ablation.png is not a PNG chart (size {os.path.getsize(png)} bytes, {width}x{height})")
except OSError as error:
    check(False, f"ablation.png unreadable: {error}")

print(f"ablation: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
result=$?
if [[ $result -ne 0 ]]; then
  echo "--- last lines of the run's stderr ($OUT.stderr):" >&2
  tail -n 20 "$OUT.stderr" >&2
fi
exit $result
