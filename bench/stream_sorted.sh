#!/usr/bin/env bash
# Streaming a training set SORTED BY LABEL (as class-ordered exports and folder listings are), the
# way a user brings it, against the same training in memory, in one run:
#  - feeder's own shards: `feeder convert sorted.csv sorted/ --shard-rows 4096` with its defaults;
#  - DuckDB's file: `COPY (... ORDER BY label) TO 'sorted.parquet'` with its defaults (one row
#    group of 60,000 rows, one page per column chunk), when tests/compat's node modules are there;
# each streamed within budgets of one half and one quarter of the decoded training set, 5 epochs,
# seeds 1-3: test accuracy (mean of the seeds) and the shuffle-quality figure of feeder-stream-bench.
#   bench/stream_sorted.sh [EPOCHS] [SEEDS]     (defaults: 5, "1 2 3")
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
feeder="${FEEDER:-$root/build/feeder}"
stream_bench="${FEEDER_STREAM_BENCH:-$root/build/feeder-stream-bench}"
python="${PYTHON:-/usr/bin/python3}"
data="${FEEDER_DATA:-/usr/share/datasets/fashion-mnist}"
epochs="${1:-5}"
seeds="${2:-1 2 3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-stream-sorted.XXXXXX")"
trap 'rm -rf "$work"' EXIT
[ -x "$feeder" ] && [ -x "$stream_bench" ] || { echo "build feeder first (./setup.sh)" >&2; exit 1; }
train="$data/train-images-idx3-ubyte.gz"
test="$data/t10k-images-idx3-ubyte.gz"

"$stream_bench" make-sorted --train "$train" --out "$work/sorted.csv" >/dev/null
"$feeder" convert "$work/sorted.csv" "$work/feeder/" --shard-rows 4096 >/dev/null
sets="feeder"
compat="$root/tests/compat"
if [ -d "$compat/node_modules/@duckdb/node-api" ]; then
  (cd "$compat" && node --input-type=module -e '
    import { DuckDBInstance } from "@duckdb/node-api";
    const [csv, out] = process.argv.slice(1);
    const connection = await (await DuckDBInstance.create(":memory:")).connect();
    await connection.run(`COPY (SELECT * FROM read_csv(${"\x27" + csv + "\x27"}) ORDER BY label) TO ${"\x27" + out + "\x27"} (FORMAT parquet)`);
  ' "$work/sorted.csv" "$work/duckdb.parquet")
  sets="feeder duckdb"
else
  echo "no DuckDB (cd tests/compat && npm install): feeder's shards only" >&2
fi
path_of() { case "$1" in feeder) echo "$work/feeder/" ;; duckdb) echo "$work/duckdb.parquet" ;; esac; }

# Budgets for the training stream: the test set (IDX, in memory, 7.6 MiB) takes its share first.
decoded=$((60000 * (784 + 8)))
test_bytes=$((10000 * (784 + 8)))
# The training loader's batch buffers also come out of its budget: prefetch + 2 of 512 float32 images.
buffers=$((6 * 512 * (784 * 4 + 16)))
budget_half=$((decoded / 2 + test_bytes + buffers))
budget_quarter=$((decoded / 4 + test_bytes + buffers))
train_half=$((decoded / 2))
train_quarter=$((decoded / 4))

for set in $sets; do
  "$stream_bench" shuffle-quality --data "$(path_of "$set")" --budget "$train_half" "$train_quarter" --epochs 2 \
    | sed "s|$work/||" >"$work/quality-$set.md"
done
run() {  # name, json, args...
  local name="$1" json="$2"
  shift 2
  echo "$name" >&2
  "$feeder" train --report-json "$json" --epochs "$epochs" "$@" >"$json.log"
  grep -E '^Train data' "$json.log" | sed 's/^/  /' >&2
}
for seed in $seeds; do
  run "seed $seed: in memory (IDX), full shuffle" "$work/memory-$seed.json" --train "$train" --test "$test" --seed "$seed"
  for set in $sets; do
    run "seed $seed: $set, half" "$work/$set-half-$seed.json" --train "$(path_of "$set")" --test "$test" --seed "$seed" \
      --memory-budget "$budget_half"
    run "seed $seed: $set, quarter" "$work/$set-quarter-$seed.json" --train "$(path_of "$set")" --test "$test" \
      --seed "$seed" --memory-budget "$budget_quarter"
  done
done

"$python" - "$work" "$seeds" "$sets" "$epochs" <<'PY'
import json, statistics, sys
work, seeds, sets, epochs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
def load(name):
    with open(f"{work}/{name}.json") as f:
        return json.load(f)
def acc(name):
    return load(name)["summary"]["final_accuracy"]
def epoch_s(names):  # median training-pass seconds and data wait (% of it) over every epoch of the runs
    eps = [e for n in names for e in load(n)["epochs"]]
    return (statistics.median(e["train_seconds"] for e in eps),
            statistics.median(100 * e["data_wait_seconds"] / e["train_seconds"] for e in eps))
names = {"feeder": "feeder convert's defaults (--shard-rows 4096)", "duckdb": "DuckDB's defaults (one row group)"}
mem = [acc(f"memory-{s}") for s in seeds]
print(f"Test accuracy after {epochs} epochs, training set sorted by label, seeds {', '.join(seeds)}:\n")
print("| training set | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | against in memory | train s / epoch | data wait |")
print("|---|" + "---:|" * (len(seeds) + 4))
t, w = epoch_s([f"memory-{s}" for s in seeds])
print("| IDX in memory, full shuffle | " + " | ".join(f"{a:.4f}" for a in mem) + f" | {statistics.mean(mem):.4f} | | {t:.2f} | {w:.1f}% |")
for s in sets:
    for budget, label in (("half", "1/2"), ("quarter", "1/4")):
        a = [acc(f"{s}-{budget}-{seed}") for seed in seeds]
        gap = 100 * (statistics.mean(a) - statistics.mean(mem))
        t, w = epoch_s([f"{s}-{budget}-{seed}" for seed in seeds])
        print(f"| {names[s]}, streamed within {label} of the set | " + " | ".join(f"{x:.4f}" for x in a) +
              f" | {statistics.mean(a):.4f} | {gap:+.2f} points | {t:.2f} | {w:.1f}% |")
for s in sets:
    print(f"\nShuffle quality, {names[s]} (feeder-stream-bench shuffle-quality, batch 64, 2 epochs):\n")
    with open(f"{work}/quality-{s}.md") as f:
        print(f.read().strip())
PY
