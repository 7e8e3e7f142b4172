#!/usr/bin/env bash
# Crash-safe resume: `feeder train` killed with SIGKILL at a random batch, then run again with
# --resume, ends with parameters bitwise identical to a run that was never interrupted (fp32, one
# thread per rank); with one process and with two ranks. A damaged newest checkpoint is skipped
# with a warning.
#   tests/cli/checkpoint_cli_test.sh FEEDER
set -uo pipefail
feeder="$1"
data="${FEEDER_DATA:-/usr/share/datasets/fashion-mnist}"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-checkpoint-test.XXXXXX")"
trap 'pkill -9 -f "$work" 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# On failure, the logs of the runs, for the report.
show_logs() {
  local log
  for log in "$work"/*/*.log; do
    echo "--- $log" >&2
    tail -5 "$log" >&2
  done
}

# Small sets, so that a run takes seconds: 4,000 training and 4,000 test samples.
"$feeder" convert "$data/train-images-idx3-ubyte.gz" "$work/sets/" --shard-rows 4000 --codec lz4 >/dev/null ||
  { echo "FAIL: convert" >&2; exit 1; }
common=(--train "$work/sets/part-00000.parquet" --test "$work/sets/part-00001.parquet" --epochs 2 --precision fp32
        --threads 1 --batch-size 64 --dist-timeout 20)

# $1: label; the rest: extra arguments (the ranks).
check_resume() {
  local label="$1"
  shift
  local dir="$work/$label"
  mkdir -p "$dir"
  timeout 300 "$feeder" train "${common[@]}" "$@" --save "$dir/uninterrupted.pt" >"$dir/uninterrupted.log" 2>&1 ||
    { fail "$label: the uninterrupted run failed: $(tail -3 "$dir/uninterrupted.log")"; return; }
  local attempt killed=0
  for attempt in 1 2 3 4 5; do
    rm -rf "$dir/checkpoints" "$dir/resumed.pt"
    timeout 300 "$feeder" train "${common[@]}" "$@" --checkpoint-dir "$dir/checkpoints" --checkpoint-every 3 \
      --save "$dir/resumed.pt" >"$dir/killed.log" 2>&1 &
    local run=$!
    # Wait for the first checkpoint, then a random part of a second more: a random batch.
    for _ in $(seq 1 1200); do  # up to 60 s on a loaded machine
      compgen -G "$dir/checkpoints/checkpoint-*.pt" >/dev/null && break
      sleep 0.05
    done
    sleep "0.$((RANDOM % 10))"
    pkill -9 -f "$dir/checkpoints"  # the launcher and every rank
    wait "$run" 2>/dev/null
    if [ ! -e "$dir/resumed.pt" ]; then killed=1; break; fi  # else it finished first: try again
  done
  [ "$killed" -eq 1 ] || { fail "$label: the run always finished before it could be killed"; return; }
  local files
  # A write cut short leaves a .tmp- file too (not counted); a kill between a new file's rename and
  # the removal of the oldest leaves one more than the 3 kept.
  files=$(compgen -G "$dir/checkpoints/checkpoint-*.pt" | wc -l)
  [ "$files" -ge 1 ] && [ "$files" -le 4 ] || fail "$label: $files checkpoints kept (expected 1..4)"
  timeout 300 "$feeder" train "${common[@]}" "$@" --checkpoint-dir "$dir/checkpoints" --checkpoint-every 3 --resume \
    --save "$dir/resumed.pt" >"$dir/resumed.log" 2>&1 || { fail "$label: resume failed: $(tail -3 "$dir/resumed.log")"; return; }
  grep -q '^Resuming from .*checkpoint-' "$dir/resumed.log" || fail "$label: the resumed run did not say where it resumed"
  cmp -s "$dir/uninterrupted.pt" "$dir/resumed.pt" ||
    fail "$label: parameters after kill + resume differ from the uninterrupted run ($(grep -h '^Resuming' "$dir/resumed.log"))"
  echo "$label: $(grep -h '^Resuming' "$dir/resumed.log"): identical"
}

check_resume one-process
check_resume two-ranks --nproc-per-node 2

# A damaged newest checkpoint (cut short) is skipped with a warning; the one before it is used.
dir="$work/one-process"
if [ -d "$dir/checkpoints" ]; then
  newest=$(ls "$dir/checkpoints"/checkpoint-*.pt | sort | tail -1)
  count=$(ls "$dir/checkpoints"/checkpoint-*.pt | wc -l)
  truncate -s 1000 "$newest"
  timeout 300 "$feeder" train "${common[@]}" --checkpoint-dir "$dir/checkpoints" --resume --save "$dir/torn.pt" \
    >"$dir/torn.log" 2>&1 || fail "resume past a damaged checkpoint failed: $(tail -3 "$dir/torn.log")"
  grep -q "warning: $newest: skipped, it does not load" "$dir/torn.log" || fail "no warning for $newest: $(head -5 "$dir/torn.log")"
  if [ "$count" -gt 1 ]; then
    grep -q '^Resuming from' "$dir/torn.log" || fail "the previous checkpoint was not used"
  fi
  cmp -s "$dir/uninterrupted.pt" "$dir/torn.pt" || fail "parameters after resuming past a damaged checkpoint differ"
fi

[ "$failures" -eq 0 ] && echo "checkpoints: all checks passed"
[ "$failures" -eq 0 ] || show_logs
exit $((failures > 0))
