#!/usr/bin/env bash
# `feeder train` at its defaults against the article's best Python pipeline (Dataset v2 + DataLoader,
# fp32, OMP_NUM_THREADS=2, bench/reference/article_pipeline.py), on the same data in the same run,
# alternating the two so both see the same machine. Prints per-epoch train+test seconds, accuracy
# and the ratio of median epoch times.
#   bench/train_vs_python.sh [EPOCHS] [ROUNDS]      (defaults: 5 epochs, 1 round)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
feeder="${FEEDER:-$root/build/feeder}"
python="${PYTHON:-/usr/bin/python3}"
epochs="${1:-5}"
rounds="${2:-1}"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-train-vs-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT

[ -x "$feeder" ] || { echo "no feeder binary at $feeder (run ./setup.sh first)" >&2; exit 1; }
"$python" -c "import torch, pandas" 2>/dev/null ||
  { echo "$python lacks torch or pandas (apt-get install python3-torch python3-pandas)" >&2; exit 1; }

for round in $(seq 1 "$rounds"); do
  echo "round $round: feeder train (defaults), $epochs epochs" >&2
  "$feeder" train --epochs "$epochs" --report-json "$work/feeder-$round.json" >"$work/feeder-$round.log"
  echo "round $round: Python Dataset v2 + DataLoader, fp32, 2 threads, $epochs epochs" >&2
  OMP_NUM_THREADS=2 "$python" "$root/bench/reference/article_pipeline.py" --dataset v2 --batch-size 512 \
    --threads 2 --epochs "$epochs" --json "$work/python-$round.json" >"$work/python-$round.log"
done

"$python" - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def epochs(kind):
    out = []
    for r in range(1, rounds + 1):
        with open(f"{work}/{kind}-{r}.json") as f:
            out += json.load(f)["epochs"]
    return out
rows = {"feeder train (defaults)": epochs("feeder"), "Python v2 + DataLoader (fp32)": epochs("python")}
print(f"| pipeline | epochs | median train s | median test s | median epoch s | final accuracy |")
print(f"|---|---|---|---|---|---|")
medians = {}
for name, eps in rows.items():
    total = [e["train_seconds"] + e["test_seconds"] for e in eps]
    medians[name] = statistics.median(total)
    print(f"| {name} | {len(eps)} | {statistics.median(e['train_seconds'] for e in eps):.2f} | "
          f"{statistics.median(e['test_seconds'] for e in eps):.2f} | {medians[name]:.2f} | {eps[-1]['accuracy']:.4f} |")
feeder, python = medians["feeder train (defaults)"], medians["Python v2 + DataLoader (fp32)"]
print(f"\nfeeder is {python / feeder:.1f}x faster per epoch (median epoch time, same run)")
waits = [e["data_wait_seconds"] / e["train_seconds"] for e in rows["feeder train (defaults)"]]
print(f"feeder data wait: at most {100 * max(waits):.2f}% of train time in any epoch")
PY
