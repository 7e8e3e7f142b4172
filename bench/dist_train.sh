#!/usr/bin/env bash
# `feeder train` on this machine's cores as 1 rank x N threads against N ranks x 1 thread (the
# same global batch, so the same training), alternated, epochs 2.. of each run.
#   bench/dist_train.sh [ROUNDS] [EPOCHS] [PRECISION]     (defaults: 2, 3, fp32)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
feeder="${FEEDER:-$root/build/feeder}"
python="${PYTHON:-/usr/bin/python3}"
rounds="${1:-2}"
epochs="${2:-3}"
precision="${3:-fp32}"
cores="$(nproc)"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-dist-train.XXXXXX")"
trap 'rm -rf "$work"' EXIT
[ -x "$feeder" ] || { echo "build feeder first (./setup.sh)" >&2; exit 1; }

for round in $(seq 1 "$rounds"); do
  echo "round $round: 1 rank x $cores threads, batch 512" >&2
  "$feeder" train --epochs "$epochs" --precision "$precision" --threads "$cores" --batch-size 512 \
    --report-json "$work/single-$round.json" >/dev/null
  echo "round $round: $cores ranks x 1 thread, batch $((512 / cores)) each" >&2
  "$feeder" train --epochs "$epochs" --precision "$precision" --nproc-per-node "$cores" --threads 1 \
    --batch-size $((512 / cores)) --report-json "$work/ranks-$round.json" >/dev/null
done

"$python" - "$work" "$rounds" "$cores" "$precision" <<'PY'
import json, statistics, sys
work, rounds, cores, precision = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def epochs(kind):
    out = []
    for r in range(1, rounds + 1):
        with open(f"{work}/{kind}-{r}.json") as f:
            out += json.load(f)["epochs"][1:]
    return out
print(f"Epoch time on {cores} cores, {precision}, global batch 512, {rounds} rounds alternated, epochs 2.. (medians):\n")
print("| layout | train s | test s | epoch s | final accuracy |")
print("|---|---:|---:|---:|---:|")
rows = {}
for kind, label in (("single", f"1 rank x {cores} threads"), ("ranks", f"{cores} ranks x 1 thread")):
    eps = epochs(kind)
    train = statistics.median(e["train_seconds"] for e in eps)
    test = statistics.median(e["test_seconds"] for e in eps)
    rows[kind] = train + test
    acc = [json.load(open(f"{work}/{kind}-{r}.json"))["summary"]["final_accuracy"] for r in range(1, rounds + 1)]
    print(f"| {label} | {train:.2f} | {test:.2f} | {train + test:.2f} | {', '.join(f'{a:.4f}' for a in acc)} |")
print(f"\n{cores} ranks / 1 rank: {rows['ranks'] / rows['single']:.2f}x the epoch time")
PY
