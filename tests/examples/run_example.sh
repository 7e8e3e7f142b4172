#!/usr/bin/env bash
# Runs an example and checks that it exits 0 and that each PATTERN (an extended regex) matches a line
# of its output. ctest's PASS_REGULAR_EXPRESSION alone would ignore the exit status.
# usage: run_example.sh PATTERN... -- COMMAND [ARGS...]
set -uo pipefail
patterns=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  patterns+=("$1")
  shift
done
shift  # the --
output=$("$@" 2>&1)
status=$?
echo "$output"
if [ $status -ne 0 ]; then
  echo "run_example: $1 exited with status $status" >&2
  exit 1
fi
for pattern in "${patterns[@]}"; do
  grep -Eq -- "$pattern" <<<"$output" || { echo "run_example: no line of the output matches '$pattern'" >&2; exit 1; }
done
