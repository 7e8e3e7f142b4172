#!/usr/bin/env bash
# feeder train refuses absurd options before doing anything: exit status 2 and one line naming the
# option and its bound (--threads 100000 used to crash LibTorch's thread pool with SIGSEGV). And
# what the commands advise: feeder bench --help lists every benchmark; feeder convert says when a
# set is sorted by label.
set -uo pipefail
feeder=$1
failures=0

expect_refused() {
  local expected=$1
  shift
  local output status
  output=$(timeout 60 "$feeder" "$@" 2>&1)
  status=$?
  if [ "$status" -ne 2 ]; then
    echo "FAIL: feeder $* exited $status, expected 2"; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$expected" <<<"$output"; then
    echo "FAIL: feeder $* did not say '$expected':"; echo "$output" | head -5; failures=$((failures + 1)); return
  fi
  echo "ok: feeder $* -> $expected"
}

expect_refused "feeder train: --threads: 100000 is absurd; use at most 256" train --threads 100000
expect_refused "feeder train: --threads: needs an integer >= 1, got '0'" train --threads 0
expect_refused "feeder train: num_workers 5000 is absurd; use at most 256" train --workers 5000 --epochs 1
expect_refused "feeder train: batch_size 2000000000 is absurd; use at most 1073741824" train --batch-size 2000000000 --epochs 1

# `feeder bench --help` lists every benchmark, not only the two of the executable it used to hand --help to.
output=$("$feeder" bench --help) || { echo "FAIL: feeder bench --help exited $?"; failures=$((failures + 1)); }
for benchmark in loader ablation stream images distributed; do
  grep -qE "^  $benchmark +" <<<"$output" || { echo "FAIL: feeder bench --help does not list $benchmark"; failures=$((failures + 1)); }
done
# A pixel set sorted by label, converted to shards with the defaults, is said to be sorted, with
# the option that fixes it; shuffled on write it is not.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "label,p1,p2,p3,p4"
  for label in 0 1 2 3; do
    for i in $(seq 1 50); do echo "$label,$i,$((i * 2 % 256)),$((i * 3 % 256)),$((i * 5 % 256))"; done
  done
} >"$work/sorted.csv"
output=$("$feeder" convert "$work/sorted.csv" "$work/sorted/" 2>&1) || { echo "FAIL: convert exited $?"; failures=$((failures + 1)); }
if grep -qF "rows in 4 runs of one label (50 rows each on average, as in a set sorted by label): give --shuffle-on-write SEED" <<<"$output"; then
  echo "ok: a sorted set is said to be sorted"
else
  echo "FAIL: no advice for a sorted set:"; echo "$output" | tail -5; failures=$((failures + 1))
fi
output=$("$feeder" convert "$work/sorted.csv" "$work/shuffled/" --shuffle-on-write 7 2>&1) || { echo "FAIL: convert exited $?"; failures=$((failures + 1)); }
if grep -qF "runs of one label" <<<"$output" || ! grep -qF "rows shuffled with seed 7" <<<"$output"; then
  echo "FAIL: a set shuffled on write:"; echo "$output" | tail -5; failures=$((failures + 1))
else
  echo "ok: a set shuffled on write is not said to be sorted"
fi
exit $((failures > 0))
