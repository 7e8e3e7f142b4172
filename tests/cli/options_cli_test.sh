#!/usr/bin/env bash
# feeder train refuses absurd options before doing anything: exit status 2 and one line naming the
# option and its bound (--threads 100000 used to crash LibTorch's thread pool with SIGSEGV).
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
exit $((failures > 0))
