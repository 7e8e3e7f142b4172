#!/usr/bin/env bash
# `feeder train` over a sharded FashionMNIST streamed within a budget smaller than the set, against
# the same training in memory, in the same run:
#  1. speed: epoch time and data wait, streaming (shuffled shards) vs in memory (IDX), alternated;
#  2. shuffle quality: the training set sharded and SORTED BY LABEL (the classic failure of naive
#     streaming), 5 epochs streamed with the block shuffle vs 5 epochs in memory with the full
#     shuffle, mean test accuracy over 3 seeds.
#   [CODEC=lz4] bench/stream_train.sh [BUDGET] [ROUNDS] [QUALITY_BUDGETS]
#   (defaults: 32MiB, 3 rounds, "32MiB 40MiB"; the training set decodes to 45 MiB, the test set, an
#   IDX file read into memory, takes 7.6 MiB of each budget; QUALITY_BUDGETS "" skips part 2)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
feeder="${FEEDER:-$root/build/feeder}"
stream_bench="${FEEDER_STREAM_BENCH:-$root/build/feeder-stream-bench}"
python="${PYTHON:-/usr/bin/python3}"
data="${FEEDER_DATA:-/usr/share/datasets/fashion-mnist}"
budget="${1:-32MiB}"
rounds="${2:-3}"
quality_budgets="${3-32MiB 40MiB}"
codec="${CODEC:-lz4}"  # of the shards timed in part 1: lz4 decodes about 3x faster than zstd, the default
epochs=5
seeds="1 2 3"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-stream-train.XXXXXX")"
trap 'rm -rf "$work"' EXIT

[ -x "$feeder" ] && [ -x "$stream_bench" ] || { echo "build feeder first (./setup.sh)" >&2; exit 1; }
train="$data/train-images-idx3-ubyte.gz"
test="$data/t10k-images-idx3-ubyte.gz"

# Shards of 6,000 rows in row groups of 100: 10 shards, 600 row groups. Small row groups let a
# shuffle window mix many of them, which matters when the files are sorted by label.
"$feeder" convert "$train" "$work/shards/" --shard-rows 6000 --row-group-size 100 --layout image --codec "$codec" >/dev/null
"$stream_bench" make-sorted --train "$train" --out "$work/sorted/" --shard-rows 6000 --row-group-size 100 >/dev/null

run() {  # name, json, args...
  local name="$1" json="$2"
  shift 2
  echo "$name" >&2
  "$feeder" train --report-json "$json" "$@" >"$json.log"
  grep -E '^(Train|Test) data' "$json.log" | sed 's/^/  /' >&2
}

for round in $(seq 1 "$rounds"); do
  run "round $round: in memory" "$work/memory-$round.json" --train "$train" --test "$test" --epochs 3
  run "round $round: streaming within $budget" "$work/stream-$round.json" --train "$work/shards/" --test "$test" \
    --epochs 3 --memory-budget "$budget"
done
[ -n "$quality_budgets" ] || seeds=""
for seed in $seeds; do
  run "seed $seed: in memory, full shuffle" "$work/quality-memory-$seed.json" --train "$train" --test "$test" \
    --epochs "$epochs" --seed "$seed"
  for quality_budget in $quality_budgets; do
    run "seed $seed: sorted by label, streaming within $quality_budget" "$work/quality-sorted-$quality_budget-$seed.json" \
      --train "$work/sorted/" --test "$test" --epochs "$epochs" --seed "$seed" --memory-budget "$quality_budget"
  done
done

"$python" - "$work" "$rounds" "$seeds" "$budget" "$quality_budgets" "$codec" <<'PY'
import json, statistics, sys
work, rounds, seeds, budget = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
first_epochs = {}
quality_budgets = sys.argv[5].split()
codec = sys.argv[6]
def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)
def epochs(kind):
    # The first epoch of each run warms caches and allocator; the median is over the rest.
    return [e for r in range(1, rounds + 1) for e in load(f"{kind}-{r}")["epochs"][1:]]
print(f"Speed ({rounds} rounds alternated, epochs 2-3 of each run, medians):\n")
print("| training set | epoch s (train + test) | train s | data wait, % of train |")
print("|---|---|---|---|")
medians = {}
for kind, label in (("memory", "IDX in memory"), ("stream", f"10 {codec} shards streamed within {budget}")):
    eps = epochs(kind)
    total = statistics.median(e["train_seconds"] + e["test_seconds"] for e in eps)
    medians[kind] = total
    wait = statistics.median(100 * e["data_wait_seconds"] / e["train_seconds"] for e in eps)
    worst = max(100 * e["data_wait_seconds"] / e["train_seconds"] for e in eps)
    print(f"| {label} | {total:.2f} | {statistics.median(e['train_seconds'] for e in eps):.2f} | "
          f"{wait:.2f} (worst {worst:.2f}) |")
    first_epochs[label] = [load(f"{kind}-{r}")["epochs"][0] for r in range(1, rounds + 1)]
print(f"\nstreaming epoch / in-memory epoch: {medians['stream'] / medians['memory']:.3f}\n")
print("First epoch of each run, data wait, % of train: " + "; ".join(
    f"{label} " + ", ".join(f"{100 * e['data_wait_seconds'] / e['train_seconds']:.2f}" for e in eps)
    for label, eps in first_epochs.items()) + "\n")
if not quality_budgets:
    sys.exit(0)
print(f"Shuffle quality: test accuracy after {len(load('quality-memory-' + seeds[0])['epochs'])} epochs\n")
print("| seed | in memory, full shuffle | " + " | ".join(f"sorted by label, streamed within {b}" for b in quality_budgets) + " |")
print("|---|---|" + "---|" * len(quality_budgets))
mem = [load(f"quality-memory-{s}")["summary"]["final_accuracy"] for s in seeds]
srt = {b: [load(f"quality-sorted-{b}-{s}")["summary"]["final_accuracy"] for s in seeds] for b in quality_budgets}
for i, s in enumerate(seeds):
    print(f"| {s} | {mem[i]:.4f} | " + " | ".join(f"{srt[b][i]:.4f}" for b in quality_budgets) + " |")
print(f"| mean | {statistics.mean(mem):.4f} | " + " | ".join(f"{statistics.mean(srt[b]):.4f}" for b in quality_budgets) + " |")
for b in quality_budgets:
    print(f"\nwithin {b}: {100 * (statistics.mean(mem) - statistics.mean(srt[b])):.2f} points below the in-memory mean")
PY
