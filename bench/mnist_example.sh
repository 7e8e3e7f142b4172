#!/usr/bin/env bash
# LibTorch's MNIST example (its Net) fed by torch::data and by feeder on FashionMNIST: one epoch's
# train and test time and the process's peak RSS, for batch 64 (the example's) and 512, with 0 and
# 2 loader workers. Every configuration runs in its own process, REPEATS times, alternating, and the
# medians are printed with feeder's ratio to torch::data measured in the same run.
# usage: bench/mnist_example.sh [BUILD_DIR] [REPEATS]    (BUILD_DIR configured by ./setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
bench=$build/feeder-mnist-example-bench
# Built before anything is timed (./setup.sh's build leaves it out).
cmake --build "$build" --target feeder-mnist-example-bench >/dev/null ||
  { echo "mnist_example.sh: could not build $bench (is $build configured? run ./setup.sh first)" >&2; exit 1; }
# LibTorch's thread count must be set before start-up (set_num_threads afterwards runs slower).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# torch::data's MNIST dataset reads only uncompressed IDX files: both pipelines read these.
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
for file in /usr/share/datasets/fashion-mnist/*-ubyte.gz; do
  gunzip -c "$file" >"$data/$(basename "${file%.gz}")"
done

results=$data/results.txt
for ((repeat = 1; repeat <= repeats; ++repeat)); do
  for batch_size in 64 512; do
    for workers in 0 2; do
      for pipeline in torch-data feeder; do
        line=$("$bench" --pipeline "$pipeline" --data "$data" --batch-size "$batch_size" --workers "$workers")
        echo "repeat $repeat: $line" >&2
        echo "$line" >>"$results"
      done
    done
  done
done

python3 - "$results" "$repeats" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    fields = dict(item.split("=", 1) for item in line.split())
    key = (int(fields["batch_size"]), int(fields["workers"]), fields["pipeline"])
    rows.setdefault(key, []).append(fields)
def median(key, name):
    return statistics.median(float(r[name]) for r in rows[key])
print(f"LibTorch's MNIST example (Net), FashionMNIST, 1 epoch, OMP threads {rows[next(iter(rows))][0]['threads']}, "
      f"medians of {sys.argv[2]} runs each (alternating)\n")
print("| batch | workers | pipeline | train s | test s | peak RSS MiB | accuracy | train time vs torch::data | peak RSS vs torch::data |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
for batch_size, workers in sorted({(b, w) for b, w, _ in rows}):
    reference = (batch_size, workers, "torch-data")
    for pipeline in ("torch-data", "feeder"):
        key = (batch_size, workers, pipeline)
        train, rss = median(key, "train_seconds"), median(key, "peak_rss_kib")
        time_ratio = train / median(reference, "train_seconds")
        rss_ratio = rss / median(reference, "peak_rss_kib")
        name = "torch::data" if pipeline == "torch-data" else "feeder"
        print(f"| {batch_size} | {workers} | {name} | {train:.2f} | {median(key, 'test_seconds'):.2f} | "
              f"{rss / 1024:.0f} | {median(key, 'accuracy'):.4f} | {time_ratio:.2f}x | {rss_ratio:.2f}x |")
PY
