#!/usr/bin/env bash
# `feeder train` across processes on this machine (loopback addresses only): the launcher, and the
# faults that must end every rank with an error naming the rank and the cause, within the timeout.
#   tests/cli/distributed_cli_test.sh FEEDER
set -uo pipefail
feeder="$1"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-dist-test.XXXXXX")"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# A free port from the kernel (bound to 0 by Python, then released).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Runs a command with a hard limit, so that a hang fails the test instead of stalling it.
limited() { timeout --kill-after=5 "$@"; }

# 1. --nproc-per-node 2: one report, printed once, exit 0.
limited 300 "$feeder" train --nproc-per-node 2 --epochs 1 --batch-size 256 --precision fp32 \
  --report-json "$work/report.json" >"$work/launch.out" 2>"$work/launch.err"
status=$?
[ "$status" -eq 0 ] || fail "launcher exited with $status: $(cat "$work/launch.err")"
[ "$(grep -c '^Epoch 1/1' "$work/launch.out")" -eq 1 ] || fail "expected one epoch line from rank 0: $(cat "$work/launch.out")"
grep -q '2 ranks (batch 256 each)' "$work/launch.out" || fail "the run does not say it has 2 ranks"
[ -s "$work/report.json" ] || fail "rank 0 wrote no report"

# 2. A rank killed mid-training: the launcher stops the other and names the rank.
# The process of rank R of the run whose master port is P.
find_rank() {
  local environ
  for environ in /proc/[0-9]*/environ; do
    local vars
    vars="$({ tr '\0' '\n' <"$environ"; } 2>/dev/null)" || continue  # processes come and go
    if grep -qx "MASTER_PORT=$1" <<<"$vars" && grep -qx "FEEDER_LAUNCHED_RANK=$2" <<<"$vars"; then
      basename "$(dirname "$environ")"
      return
    fi
  done
}
port=$(free_port)
limited 120 "$feeder" train --nproc-per-node 2 --master-port "$port" --epochs 3 --dist-timeout 10 \
  >"$work/kill.out" 2>"$work/kill.err" &
launcher=$!
victim=""
for _ in $(seq 1 300); do  # up to 30 s for the ranks to start training
  grep -q '^Training' "$work/kill.out" 2>/dev/null && victim="$(find_rank "$port" 1)"
  [ -n "$victim" ] && break
  sleep 0.1
done
if [ -z "$victim" ]; then
  fail "rank 1 was not found among the launcher's processes"
else
  sleep 1
  kill -9 "$victim"
  start=$(date +%s)
  wait "$launcher"
  status=$?
  took=$(($(date +%s) - start))
  [ "$status" -ne 0 ] || fail "the launcher exited 0 after rank 1 was killed"
  grep -q 'rank 1 was killed by signal 9' "$work/kill.err" || fail "the launcher did not name rank 1: $(cat "$work/kill.err")"
  [ "$took" -le 30 ] || fail "the launcher took $took s to end after rank 1 died"
fi

# Ranks 0 and 1 started by hand, as torchrun would, each with its own arguments and port:
#   by_hand NAME PORT0 PORT1 "RANK 0 ARGS" "RANK 1 ARGS"
# Their stderr goes to $work/NAME0.err and NAME1.err, their statuses to status0 and status1.
by_hand() {
  local name="$1" port0="$2" port1="$3"
  # shellcheck disable=SC2086  # the argument strings are split on purpose
  RANK=0 WORLD_SIZE=2 MASTER_PORT=$port0 limited 60 "$feeder" train --epochs 1 $4 >/dev/null 2>"$work/${name}0.err" &
  local r0=$!
  # shellcheck disable=SC2086
  RANK=1 WORLD_SIZE=2 MASTER_PORT=$port1 limited 60 "$feeder" train --epochs 1 $5 >/dev/null 2>"$work/${name}1.err"
  status1=$?
  wait "$r0"
  status0=$?
  [ "$status0" -ne 0 ] && [ "$status1" -ne 0 ] || fail "$name: the ranks exited $status0 and $status1"
}

# 3. Ranks started with different settings, or given different data: both fail naming them.
port=$(free_port)
by_hand mismatch "$port" "$port" "--batch-size 512 --dist-timeout 10" "--batch-size 256 --dist-timeout 10"
for rank in 0 1; do
  grep -q "rank $rank: the ranks were started with different settings: batch size: rank 0 has 512, rank 1 has 256" \
    "$work/mismatch$rank.err" || fail "rank $rank's error: $(cat "$work/mismatch$rank.err")"
done
port=$(free_port)
test_images=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
by_hand data "$port" "$port" "--dist-timeout 10" "--dist-timeout 10 --train $test_images --test $test_images"
for rank in 0 1; do
  grep -q "rank $rank: the ranks were started with different settings: .*training set: rank 0 has 60000 samples, fingerprint [0-9a-f]*, rank 1 has 10000 samples" \
    "$work/data$rank.err" || fail "rank $rank's error for different data: $(cat "$work/data$rank.err")"
done

# 4. A master that never comes up, and 5. a wrong port: the rank fails within the timeout (2 s).
port=$(free_port)
start=$(date +%s)
RANK=1 WORLD_SIZE=2 MASTER_PORT=$port limited 60 "$feeder" train --epochs 1 --dist-timeout 2 >/dev/null 2>"$work/nomaster.err"
status=$?
took=$(($(date +%s) - start))
[ "$status" -ne 0 ] || fail "rank 1 without a master exited 0"
grep -q "rank 1: joining the group at 127.0.0.1:$port" "$work/nomaster.err" || fail "no-master error: $(cat "$work/nomaster.err")"
[ "$took" -le 15 ] || fail "rank 1 without a master took $took s"

port_a=$(free_port)
port_b=$(free_port)
while [ "$port_b" = "$port_a" ]; do port_b=$(free_port); done
by_hand port "$port_a" "$port_b" "--dist-timeout 2" "--dist-timeout 2"
grep -q "rank 0: joining the group" "$work/port0.err" || fail "rank 0's wrong-port error: $(cat "$work/port0.err")"
grep -q "rank 1: joining the group" "$work/port1.err" || fail "rank 1's wrong-port error: $(cat "$work/port1.err")"

# 6. Two "machines", one rank each, that reach each other only through their own loopback
# addresses (127.0.0.2 serves rank 0, 127.0.0.3 is node 1): the same parameters, bit for bit, as two
# ranks on one machine.
port=$(free_port)
small=(--epochs 1 --batch-size 256 --precision fp32 --threads 1 --dist-timeout 30)
limited 300 "$feeder" train "${small[@]}" --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.2 \
  --master-port "$port" --local-addr 127.0.0.2 --save "$work/nodes.pt" >"$work/node0.out" 2>"$work/node0.err" &
node0=$!
limited 300 "$feeder" train "${small[@]}" --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.2 \
  --master-port "$port" --local-addr 127.0.0.3 >"$work/node1.out" 2>"$work/node1.err"
status1=$?
wait "$node0"
status0=$?
[ "$status0" -eq 0 ] && [ "$status1" -eq 0 ] ||
  fail "two nodes exited $status0 and $status1: $(cat "$work/node0.err" "$work/node1.err")"
limited 300 "$feeder" train "${small[@]}" --nproc-per-node 2 --save "$work/one-machine.pt" >/dev/null 2>"$work/one.err" ||
  fail "two ranks on one machine failed: $(cat "$work/one.err")"
cmp -s "$work/nodes.pt" "$work/one-machine.pt" || fail "two nodes and two local ranks trained different parameters"

[ "$failures" -eq 0 ] && echo "distributed CLI: all checks passed"
exit $((failures > 0))
