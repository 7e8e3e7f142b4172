#!/usr/bin/env bash
# feeder convert stopped by SIGINT or SIGTERM removes what it wrote (shards, marker, the directory
# it made) and then ends by that signal, as a shell expects; started with SIGINT ignored (a script's
# background job) it ignores it; killed by SIGKILL it cannot clean up, and the set it leaves is
# marked unfinished, which opening it reports.
set -euo pipefail
set -m  # job control: background jobs keep SIGINT, as a command started from a terminal does
feeder=$1
data=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
work=$(mktemp -d "${TMPDIR:-/tmp}/feeder-convert-interrupt.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Slow enough to be stopped midway: 120 shards at zstd's level 19.
start() {
  "$feeder" convert "$data" "$work/$1/" --shard-rows 500 --codec zstd --level 19 >/dev/null 2>"$work/$1.err" &
  pid=$!
}
# Until the second shard is there (the conversion is under way), at most 60 s.
wait_for_shards() {
  for _ in $(seq 1 1200); do
    [ -e "$work/$1/part-00001.parquet" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "the conversion ended before it was stopped: $(cat "$work/$1.err")"
    sleep 0.05
  done
  fail "no second shard after 60 s"
}

for signal in INT TERM; do
  start "$signal"
  wait_for_shards "$signal"
  kill "-$signal" "$pid"
  rc=0
  timeout 60 tail --pid="$pid" -f /dev/null || fail "SIG$signal did not stop the conversion within 60 s"
  wait "$pid" || rc=$?
  expected=$((128 + $(kill -l "$signal")))  # ended by the signal: 130 for INT, 143 for TERM
  [ "$rc" = "$expected" ] || fail "SIG$signal: exit $rc, not $expected: $(cat "$work/$signal.err")"
  [ ! -e "$work/$signal" ] || fail "SIG$signal left $(ls -A "$work/$signal")"
  grep -q "^feeder convert: interrupted; what it had written is removed$" "$work/$signal.err" ||
    fail "SIG$signal: $(cat "$work/$signal.err")"
done

# Started with SIGINT ignored, it stays ignored: the conversion runs to its end.
(trap '' INT; exec "$feeder" convert "$data" "$work/ignored/" --shard-rows 500 --codec zstd --level 19 >/dev/null 2>"$work/ignored.err") &
pid=$!
wait_for_shards ignored
kill -INT "$pid"
wait "$pid" || fail "with SIGINT ignored, the conversion failed: $(cat "$work/ignored.err")"
[ -e "$work/ignored/index.json" ] || fail "with SIGINT ignored, the set is not complete"

start KILL
wait_for_shards KILL
{ kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true
[ -e "$work/KILL/.feeder-convert-unfinished" ] || fail "a killed conversion left no marker"
if output=$("$feeder" inspect "$work/KILL" 2>&1); then fail "a set cut short was described: $output"; fi
grep -qF "feeder convert has not finished writing this set" <<<"$output" || fail "not told: $output"
echo "ok: SIGINT and SIGTERM remove what convert wrote and end it by the signal, an ignored SIGINT stays ignored, and a set cut short by SIGKILL is refused"
