#!/usr/bin/env bash
# `feeder train` started by torchrun itself (python3 -m torch.distributed.run --no_python), on
# loopback addresses only. torchrun's agent already serves the store on MASTER_PORT and says so with
# TORCHELASTIC_USE_AGENT_STORE=True: every rank, rank 0 too, must join it as a client. The run must
# train, and train the same parameters, bit for bit, as feeder's own launcher (--nproc-per-node 2).
# Exits 77 (skipped) when torch.distributed.run is not installed.
#   tests/cli/torchrun_cli_test.sh FEEDER
set -uo pipefail
feeder="$1"
python=/usr/bin/python3  # Debian's python3-torch; the python3 first on PATH may lack torch
data="${FEEDER_DATA:-/usr/share/datasets/fashion-mnist}"
if ! "$python" -c 'import torch.distributed.run' 2>/dev/null; then
  echo "SKIP: $python has no torch.distributed.run (Debian package python3-torch)"
  exit 77
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-torchrun-test.XXXXXX")"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Debian 13's torch 2.6 is built without libuv, yet its torchrun's rendezvous stores ask for libuv
# (torch 2.4's default) whatever USE_LIBUV says: such a torchrun stops before starting any job, a
# `true` included (docs/distributed.md). Nothing feeder does can change that: skipped there, with the
# reason. feeder joining an agent's store is also tested without torchrun (Distributed.RanksJoin...).
libuv_error=$("$python" -c '
import datetime, socket, torch.distributed as dist
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
try:
    dist.TCPStore("127.0.0.1", port, 1, True, timeout=datetime.timedelta(seconds=5))
except RuntimeError as error:
    if "libuv" in str(error): print(error)
' 2>&1 | head -n 1)
if [ -n "$libuv_error" ]; then
  echo "SKIP: this torch's torchrun cannot start any job: its store fails with \"$libuv_error\""
  exit 77
fi
# A hard limit on every run, so that a hang fails the test instead of stalling it.
limited() { timeout --kill-after=5 "$@"; }

# A small set, so that a run takes seconds: 2,000 training and 2,000 test samples, 4 steps of
# 2 x 256.
limited 120 "$feeder" convert "$data/train-images-idx3-ubyte.gz" "$work/sets/" --shard-rows 2000 >/dev/null ||
  { echo "FAIL: convert" >&2; exit 1; }
small=(--train "$work/sets/part-00000.parquet" --test "$work/sets/part-00001.parquet" --epochs 1 --batch-size 256
       --precision fp32 --threads 1 --dist-timeout 30)

# --redirects 1 --tee 1: the workers' stdout goes to log files under --log_dir and to the console,
# each line prefixed with "[default<local rank>]:". torchrun's default, 0, fails before any worker
# starts on Debian's torch 1.13 under Python 3.11 (Std.from_str("0") is None there: iterating an
# IntFlag no longer yields its zero member), so the test states a value that works everywhere.
port=$(free_port)
limited 300 "$python" -m torch.distributed.run --nproc_per_node=2 --master_addr 127.0.0.1 --master_port "$port" \
  --monitor_interval 1 --redirects 1 --tee 1 --log_dir "$work/torchrun-logs" \
  --no_python "$feeder" train "${small[@]}" --save "$work/torchrun.pt" >"$work/torchrun.out" 2>"$work/torchrun.err"
status=$?
[ "$status" -eq 0 ] || fail "torchrun exited with $status: $(grep 'rank [0-9]:\|Error' "$work/torchrun.err" | tail -5)"
[ "$(grep -c '^\[default0\]:Epoch 1/1' "$work/torchrun.out")" -eq 1 ] ||
  fail "expected one epoch line from rank 0: $(cat "$work/torchrun.out")"
grep -q '^\[default1\]:' "$work/torchrun.out" && fail "rank 1 printed: $(grep '^\[default1\]:' "$work/torchrun.out")"
grep -q '2 ranks (batch 256 each)' "$work/torchrun.out" || fail "the run under torchrun does not say it has 2 ranks"
[ -s "$work/torchrun.pt" ] || fail "rank 0 saved no model under torchrun"

# feeder's launcher, started with torchrun's variable in its environment (as from inside a torchrun
# worker): its ranks must not inherit it, rank 0 serves the launcher's own store.
TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RESTART_COUNT=0 limited 300 "$feeder" train "${small[@]}" \
  --nproc-per-node 2 --save "$work/launcher.pt" >/dev/null 2>"$work/launcher.err" ||
  fail "feeder's launcher failed: $(tail -3 "$work/launcher.err")"
if [ -s "$work/torchrun.pt" ] && [ -s "$work/launcher.pt" ]; then
  cmp -s "$work/torchrun.pt" "$work/launcher.pt" || fail "torchrun and --nproc-per-node 2 trained different parameters"
fi

[ "$failures" -eq 0 ] && echo "torchrun: all checks passed"
exit $((failures > 0))
